package main

import (
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// exchange moves one request's data through the staging buffers a backend
// hands it, while the request holds them.
type exchange interface {
	// Fill writes the request's input into staging.
	Fill(staging []byte) error
	// Read takes the request's output from out.
	Read(out []byte) error
}

// requests makes each client's exchange for request i, reused from one
// request to the next.
func requests(w *mlpmodel.Workload, clients int, full *mlpmodel.Worst) func(c, i int) exchange {
	xs := make([]mlpmodel.Request, clients)
	return func(c, i int) exchange {
		xs[c] = w.Request(i, full)
		return &xs[c]
	}
}
