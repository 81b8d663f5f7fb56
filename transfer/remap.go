package transfer

import (
	"path"
	"strings"
)

// OutputRemaps reads transfer_output_remaps ("name = newname; ...") into
// a renaming of output names: a name remapped, or a directory's, with
// what is below it. It returns nil when there is nothing to rename.
func OutputRemaps(v string, ok bool) func(string) string {
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	remaps := map[string]string{}
	for pair := range strings.SplitSeq(v, ";") {
		from, to, ok := strings.Cut(pair, "=")
		if ok {
			remaps[path.Clean(strings.TrimSpace(from))] = path.Clean(strings.TrimSpace(to))
		}
	}
	return func(name string) string {
		for p := name; p != "." && p != "/"; p = path.Dir(p) {
			if to, ok := remaps[p]; ok {
				return path.Join(to, strings.TrimPrefix(name, p))
			}
		}
		return name
	}
}
