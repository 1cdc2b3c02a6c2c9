package kvcache

// Admit says whether a new sequence with prompt, and room for n tokens
// after it, fits now, keeping the watermark's pages free (WithWatermark)
// for the running sequences to grow into: nil if it does, else a
// *NoPagesError (matching ErrNoPages) with the pages it needs, those free
// and those the watermark keeps. The prompt's leading pages that prefix
// caching would reuse are not counted as needed. Admit takes nothing; a
// scheduler calls it before Create and Append, as vLLM's does before it
// schedules a waiting request.
func (c *Cache) Admit(prompt []int32, n int) error {
	if n < 0 {
		n = 0
	}
	st := seqState{chain: rootHash}
	hits, _ := c.lookup(&st, prompt)
	need := pagesFor(0, len(prompt)+n-len(hits)*c.layout.PageTokens, c.layout.PageTokens)
	avail := c.available() - c.unheld(hits)
	reserve := int(c.cfg.watermark * float64(c.n))
	if need > avail-reserve {
		return &NoPagesError{Op: "Admit", Seq: -1, Needed: need, Free: avail, Reserve: reserve}
	}
	return nil
}
