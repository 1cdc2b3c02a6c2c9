package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

// captured keeps a request's output.
type captured struct {
	request
	got []byte
}

func (x *captured) read(out []byte) error {
	x.got = append([]byte(nil), out[:4*len(x.want)]...)
	return x.request.read(out)
}

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
		x := &captured{request: request{in: w.inputs[0], want: w.want[0], full: &s.worst}}
		if _, err := b.serve(context.Background(), 0, rows, x); err != nil {
			return fmt.Errorf("-dump, batch %d: %w", rows, err)
		}
		batches = append(batches, mlpmodel.Batch{Rows: rows, Input: floats.Of(w.inputs[0]), Output: floats.Of(x.got)})
	}
	return mlpmodel.Dump(dir, s.m.Params, s.c.seed, batches)
}
