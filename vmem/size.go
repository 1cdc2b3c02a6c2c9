package vmem

// roundUp rounds n up to a multiple of m, which is not zero; ok is false
// when the result does not fit in a uint64. m need not be a power of two: a
// chunk is any multiple of the granularity.
func roundUp(n, m uint64) (r uint64, ok bool) {
	rem := n % m
	if rem == 0 {
		return n, true
	}
	r = n + (m - rem)
	return r, r > n
}
