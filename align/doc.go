// Package align holds overflow-checked alignment arithmetic over unsigned
// integers.
//
// Every function takes the alignment as an argument and requires it to be a
// power of two; rounding up near the top of the type reports overflow rather
// than wrapping to a small number, which would otherwise turn into an
// overlapping placement.
package align
