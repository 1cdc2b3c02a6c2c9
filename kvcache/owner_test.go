package kvcache

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnerHandsTheCacheOn: the cache belongs to one goroutine at a time;
// handed on through a channel, as the docs say, it is used by several in
// turn, and the race detector (go test -race) finds nothing.
func TestOwnerHandsTheCacheOn(t *testing.T) {
	c, _, _ := newCache(t, WithPages(64))
	baton := make(chan []Seq, 1)
	baton <- nil
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				seqs := <-baton
				s := c.Create()
				if _, err := s.Append(toks(g*1000+i, 5)); err != nil {
					assert.ErrorIs(t, err, ErrNoPages)
				}
				seqs = append(seqs, s)
				if len(seqs) > 8 {
					assert.NoError(t, seqs[0].Free())
					seqs = seqs[1:]
				}
				baton <- seqs
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, c, <-baton)
}

// TestVarIsReadWhileTheOwnerWorks: Var's value is read from another
// goroutine (an HTTP handler's) while the owner appends and frees, with no
// race, and shows the owner's last call.
func TestVarIsReadWhileTheOwnerWorks(t *testing.T) {
	c, _, _ := newCache(t, WithPages(64))
	v := c.Var()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			var st Stats
			assert.NoError(t, json.Unmarshal([]byte(v.String()), &st))
			assert.Equal(t, 64, st.Used+st.Cached+st.Free)
		}
	}()
	for i := range 200 {
		s := c.Create()
		_, err := s.Append(toks(i, 9))
		require.NoError(t, err)
		require.NoError(t, s.Free())
	}
	<-done
	s := c.Create()
	_, err := s.Append(toks(0, 6))
	require.NoError(t, err)
	var st Stats
	require.NoError(t, json.Unmarshal([]byte(v.String()), &st))
	assert.Equal(t, c.Stats(), st)
	assert.Equal(t, 1, st.Seqs)
}
