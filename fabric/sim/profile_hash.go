package sim

import (
	"crypto/sha256"
	"encoding/hex"

	yaml "go.yaml.in/yaml/v3"
)

// Hash identifies the profile's parameters: the first 16 hex digits of the
// SHA-256 of its canonical YAML encoding (every field, in declaration order,
// whatever the file's layout, comments or description). Two profiles with
// the same hash model the same hardware (the name is not hashed either: a
// copy of a built-in profile under another name hashes alike); records carry it so that a result
// names the exact parameters it came from, including a profile changed by
// an override or loaded from a file.
func (p *Profile) Hash() string {
	q := *p
	q.Name, q.Description = "", "" // labels, not parameters
	b, err := yaml.Marshal(&q)
	if err != nil { // a Profile is plain data: cannot happen
		return "unknown"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
