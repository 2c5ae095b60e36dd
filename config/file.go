package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/knadh/koanf/parsers/yaml"
	yamlv3 "go.yaml.in/yaml/v3"
)

// MaxFileSize bounds the config file: a full config is a few KiB, and a
// path to /dev/zero or a log file must fail, not fill memory.
const MaxFileSize = 1 << 20

// maxMappingKeys bounds the keys of one mapping. The YAML decoder checks a
// mapping for duplicate keys pairwise, so a mapping of 100 000 keys took a
// minute; polyccm's largest has a few dozen.
const maxMappingKeys = 1000

func (l *loader) readFile() error {
	path := l.src.Path
	// Non-blocking, so that a named pipe is refused below instead of
	// waiting for a writer forever.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("config file %s does not exist: copy ccm.example.yaml there and edit it, or pass --config PATH", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot read config file %s: permission denied; run polyccm as a user that may read it (the packages make it readable by the polyccm group)", path)
	case err != nil:
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	}
	switch {
	case st.IsDir():
		return fmt.Errorf("config file %s is a directory; pass the path of the YAML file", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("config file %s is not a regular file; pass the path of the YAML file", path)
	}
	l.fileMode = st.Mode().Perm()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	switch {
	case err != nil:
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	case len(b) > MaxFileSize:
		return fmt.Errorf("config file %s is larger than %d KiB; a polyccm config is a few KiB: check the path", path, MaxFileSize>>10)
	}
	if err := checkShape(b); err != nil {
		return fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	if err := l.k.Load(rawBytes(b), yaml.Parser()); err != nil {
		return fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	for _, key := range l.k.Keys() {
		l.explicit[key] = path
	}
	return nil
}

// rawBytes is a koanf provider of a file already read.
type rawBytes []byte

func (b rawBytes) ReadBytes() ([]byte, error) { return b, nil }

func (b rawBytes) Read() (map[string]any, error) {
	return nil, errors.New("rawBytes needs a parser")
}

// checkShape parses the YAML into nodes, which costs time linear in its
// size, and refuses a mapping too large for the decoder to check (see
// maxMappingKeys) and keys repeated in a mapping, each with its line.
func checkShape(b []byte) error {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return err
	}
	var walk func(n *yamlv3.Node) error
	walk = func(n *yamlv3.Node) error {
		if n.Kind == yamlv3.MappingNode {
			if len(n.Content)/2 > maxMappingKeys {
				return fmt.Errorf("line %d: a mapping of %d keys; polyccm's config has at most a few dozen in one place", n.Line, len(n.Content)/2)
			}
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind == yamlv3.ScalarNode {
					if line, dup := seen[k.Value]; dup {
						return fmt.Errorf("line %d: key %q is already set on line %d", k.Line, k.Value, line)
					}
					seen[k.Value] = k.Line
				}
			}
		}
		// Aliases are not followed: the decoder bounds their expansion.
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&doc)
}
