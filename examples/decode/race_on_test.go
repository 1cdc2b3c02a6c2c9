//go:build race

package main

// raceEnabled: the race detector is on, and slows the fake's CPU GEMMs
// tenfold or more.
const raceEnabled = true
