package plan

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// NoFitError reports that Plan found no layout within the capacity asked
// for. Plan returns it along with a Result that holds the best layout it
// found, whose ArenaBytes exceeds the capacity. It wraps ErrNoFit.
type NoFitError struct {
	// Capacity is the arena size asked for.
	Capacity uint64
	// LowerBound is the most bytes alive at one step, as in Result.
	LowerBound uint64
	// BestArena is the arena of the best layout found.
	BestArena uint64
	// Proven is true when no layout within the capacity exists: the
	// capacity is below the lower bound or a request, or the exact search
	// was exhausted. It is false when the search's time limit or context
	// ended it first.
	Proven bool
}

func (e *NoFitError) Error() string {
	why := "the search ended before finding one"
	switch {
	case e.Capacity < e.LowerBound:
		why = "more bytes than that are alive at one step"
	case e.Proven:
		why = "the search proved that none exists"
	}
	return fmt.Sprintf("%v (%s): %s (lower bound %s, best arena found %s)",
		ErrNoFit, humanize.IBytes(e.Capacity), why, humanize.IBytes(e.LowerBound), humanize.IBytes(e.BestArena))
}

// Unwrap makes the error match ErrNoFit.
func (e *NoFitError) Unwrap() error { return ErrNoFit }
