package dumpdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ManifestFile is the name of the manifest in a dump directory.
const ManifestFile = "manifest.json"

// Write makes dir if missing and writes into it each of files, by name,
// then manifest as indented JSON in ManifestFile. An error writing says
// -dump, the flag that asked for it.
func Write(dir string, files map[string][]byte, manifest any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-dump: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("-dump: %w", err)
		}
	}
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	// The manifests' prose holds '<' (NumPy's '<f4'): kept as it is, for people.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(manifest); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), j.Bytes(), 0o644); err != nil {
		return fmt.Errorf("-dump: %w", err)
	}
	return nil
}

// Read decodes dir's ManifestFile into manifest, as a reader of the dump
// would.
func Read(dir string, manifest any) error {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, manifest); err != nil {
		return fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return nil
}
