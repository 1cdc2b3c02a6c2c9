package kvcache

// rootHash is the prefix hash before a sequence's first page.
const rootHash uint64 = 0x9e3779b97f4a7c15

// pageHash is the prefix hash of a full page: its parent's prefix hash and
// its token ids, FNV-1a over the ids, then mixed (SplitMix64's finaliser)
// so that close inputs land far apart. A hit is confirmed against the
// page's parent hash and tokens, so two pages collide only if two different
// prefixes give their parents the same 64-bit hash.
func pageHash(parent uint64, tokens []int32) uint64 {
	h := parent ^ 0xcbf29ce484222325
	for _, t := range tokens {
		h ^= uint64(uint32(t))
		h *= 0x100000001b3
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
