package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// dump writes the parameters, the first input of each batch size and the
// output one slot computed for it, all compared with the CPU's, and the
// manifest (mlpmodel.Dump), into dir.
func (s *session) dump(dir string) (err error) {
	b, err := newSlotsBackend(s.m, s.lib, 1, s.c.batches, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close()) }()
	var batches []mlpmodel.Batch
	for _, rows := range s.c.batches {
		w := s.loads[rows]
		x := &mlpmodel.Request{In: w.Inputs[0], Want: w.Want[0], Full: &s.worst, Keep: true}
		if _, err := b.serve(context.Background(), 0, rows, x); err != nil {
			return fmt.Errorf("-dump, batch %d: %w", rows, err)
		}
		batches = append(batches, mlpmodel.Batch{Rows: rows, Input: floats.Of(w.Inputs[0]), Output: x.Got})
	}
	return mlpmodel.Dump(dir, s.m.Params, s.c.seed, batches)
}
