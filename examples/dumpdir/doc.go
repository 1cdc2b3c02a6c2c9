// Package dumpdir writes the -dump directory of the examples that check
// their outputs (mlp, tp, decode): the data files, then manifest.json
// describing them, so that another framework can recompute the outputs.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
// What each file holds, and the manifest's fields, are the example's.
package dumpdir
