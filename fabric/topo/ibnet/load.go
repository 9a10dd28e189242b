package ibnet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// Load reads the fabric in the file at path: the YAML format when the name
// ends .yaml or .yml or the content is a YAML mapping with the format's
// keys (switches, hosts, links, name), otherwise ibnetdiscover's output.
// Errors name the file.
func Load(path string) (*topo.Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fabric file (ibnetdiscover output or YAML): %w", err) // *fs.PathError names the file
	}
	if isYAML(path, data) {
		return ReadYAML(bytes.NewReader(data), path)
	}
	return ReadIBNetDiscover(bytes.NewReader(data), path)
}

// LoadLFTs reads the forwarding tables of t from the dump at path (see
// ReadLFTs). Errors name the file.
func LoadLFTs(path string, t *topo.Topology) (*topo.Tables, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("forwarding-table dump (OpenSM's LFT dump or ibroute output): %w", err)
	}
	defer f.Close()
	tb, err := ReadLFTs(f, t)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.File == "" {
			e.File = path
			return nil, e
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tb, nil
}

// isYAML tells the YAML format from ibnetdiscover's output.
func isYAML(path string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := root.Content[0]
	for i := 0; i < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "switches", "hosts", "links", "name":
			return true
		}
	}
	return false
}
