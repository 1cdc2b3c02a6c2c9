package dumpdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteWritesTheFilesThenTheManifest(t *testing.T) {
	type manifest struct {
		Note string `json:"note"`
	}
	dir := filepath.Join(t.TempDir(), "made")
	require.NoError(t, Write(dir, map[string][]byte{"a.bin": {1, 2}, "b.bin": nil}, manifest{"x < y & z"}))
	a, err := os.ReadFile(filepath.Join(dir, "a.bin"))
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, a)
	assert.FileExists(t, filepath.Join(dir, "b.bin"))
	m, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"note\": \"x < y & z\"\n}\n", string(m), "indented, not HTML-escaped")
	var back manifest
	require.NoError(t, Read(dir, &back))
	assert.Equal(t, manifest{"x < y & z"}, back)
}

func TestWriteSaysDump(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err := Write(filepath.Join(file, "dir"), nil, struct{}{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-dump: ")
	assert.Error(t, Write(t.TempDir(), nil, func() {}), "a manifest JSON cannot hold")
}

func TestReadSaysWhichFile(t *testing.T) {
	dir := t.TempDir()
	require.ErrorIs(t, Read(dir, &struct{}{}), os.ErrNotExist)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{"), 0o644))
	assert.ErrorContains(t, Read(dir, &struct{}{}), "manifest.json: ")
}
