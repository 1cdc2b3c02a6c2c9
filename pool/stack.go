package pool

// pop takes the last element off *s, the one pushed (appended) last: the
// slots made ready and the spare waiters are stacks, so that the warmest
// comes out first. ok is false when *s is empty.
func pop[T any](s *[]T) (v T, ok bool) {
	n := len(*s)
	if n == 0 {
		return v, false
	}
	v = (*s)[n-1]
	*s = (*s)[:n-1]
	return v, true
}
