// Package bytekernels holds the two byte kernels the memory-checking
// examples (memcheck, annotate) launch, one thread a byte, in PTX with
// their Go twins for the fake runtime:
//
//	fill(u8 *ptr, u64 n, u32 value)   ptr[i] = value
//	copy(u8 *dst, u8 *src, u64 n)     dst[i] = src[i]
//
// Each thread checks its index against n, as real kernels do: the bugs
// those examples make are in the n the host passes, not in the kernels,
// which is where such bugs usually are. The index is 64-bit (mad.wide) so
// that n can be any u64.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
package bytekernels
