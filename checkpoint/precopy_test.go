package checkpoint

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMorePreDumps(t *testing.T) {
	cases := []struct {
		written []uint64
		want    bool
	}{
		{nil, true},                       // always try one
		{[]uint64{1000}, true},            // a second may copy less
		{[]uint64{0}, false},              // nothing dirty: go final
		{[]uint64{1000, 400}, true},       // still shrinking
		{[]uint64{1000, 1000}, false},     // stopped shrinking
		{[]uint64{1000, 1200}, false},     // grows: the job dirties faster
		{[]uint64{1000, 0}, false},        // nothing left
		{[]uint64{1000, 400, 100}, false}, // MaxPreDumps reached
	}
	for _, c := range cases {
		if got := morePreDumps(c.written); got != c.want {
			t.Errorf("morePreDumps(%v) = %v, want %v", c.written, got, c.want)
		}
	}
}

// preCopyImage lays out what DumpPreCopy leaves before nestPreDumps: a
// final image whose parent link points into the staging directory, and
// two pre-dumps there, the second linked to the first, as CRIU links
// them.
func preCopyImage(t *testing.T) (dir, staging string) {
	t.Helper()
	base := t.TempDir()
	dir, staging = filepath.Join(base, "ckpt"), filepath.Join(base, "ckpt.pre")
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(staging, "pre.1", "pages-1.img"), "first")
	write(filepath.Join(staging, "pre.2", "pages-1.img"), "second")
	link("../pre.1", filepath.Join(staging, "pre.2", "parent"))
	write(filepath.Join(dir, "pages-1.img"), "final")
	write(filepath.Join(dir, "files.img"), "files")
	link("../ckpt.pre/pre.2", filepath.Join(dir, "parent"))
	return dir, staging
}

// TestPreCopyImageTravels nests pre-dumps into an image, packs it and
// unpacks it elsewhere: the chain of parent links still leads from the
// final dump to the first pre-dump, with nothing outside the image.
func TestPreCopyImageTravels(t *testing.T) {
	dir, staging := preCopyImage(t)
	if err := nestPreDumps(dir, staging, 2); err != nil {
		t.Fatal(err)
	}
	// Packed before the staging directory goes, a link into it would
	// be refused; and once it is gone nothing may point there.
	if err := os.RemoveAll(staging); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	pm, err := Pack(&buf, dir, testSeal)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "restore")
	um, err := Unpack(bytes.NewReader(buf.Bytes()), out, testSeal)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pm.Files, um.Files) {
		t.Errorf("unpacked %v, packed %v", um.Files, pm.Files)
	}
	for name, want := range map[string]string{
		"pages-1.img":               "final",
		"parent/pages-1.img":        "second",
		"parent/parent/pages-1.img": "first",
	} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	for name, want := range map[string]string{"parent": "pre.2", "pre.2/parent": "../pre.1"} {
		if got, err := os.Readlink(filepath.Join(out, name)); err != nil || got != want {
			t.Errorf("link %s -> %q, %v; want %q", name, got, err, want)
		}
	}
}

// TestPackRefusesLinkOut checks that Pack refuses a link out of the
// image, as a final dump's link into the staging directory would be.
func TestPackRefusesLinkOut(t *testing.T) {
	dir, _ := preCopyImage(t)
	if _, err := Pack(&bytes.Buffer{}, dir, testSeal); err == nil {
		t.Error("packed an image linked to a directory outside it")
	}
}

// linkImage builds a packed image of the given tar entries (a link when
// the entry has a target, else an empty file) with a matching manifest,
// sealed for the tests' job.
func linkImage(t *testing.T, entries []FileSum) []byte {
	t.Helper()
	return handPacked(t, func(tw *tar.Writer) error {
		m := Manifest{Version: 1}
		for _, e := range entries {
			hdr := &tar.Header{Name: e.Name, Mode: 0o600, Typeflag: tar.TypeReg}
			if e.Link != "" {
				hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
			} else {
				e.SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // empty
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			m.Files = append(m.Files, e)
		}
		m.Seal = testSeal.sum(m.Files)
		mb, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: ManifestName, Mode: 0o600, Size: int64(len(mb)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(mb)
		return err
	})
}

// TestUnpackRefusesEscapingLinks feeds images whose links would lead out
// of the image directory: each is refused as a bad image and nothing is
// left behind, while the same shapes kept inside unpack.
func TestUnpackRefusesEscapingLinks(t *testing.T) {
	bad := map[string][]FileSum{
		"absolute":           {{Name: "parent", Link: "/etc"}},
		"climbs out":         {{Name: "parent", Link: ".."}},
		"climbs out deeper":  {{Name: "pre.2/parent", Link: "../.."}},
		"climbs after names": {{Name: "d/up", Link: ".."}, {Name: "parent", Link: "d/up/.."}},
		"dot":                {{Name: "parent", Link: "./x"}},
		"file below link":    {{Name: "d", Link: "pre.1"}, {Name: "d/x.img"}},
	}
	for name, entries := range bad {
		t.Run(name, func(t *testing.T) {
			img := linkImage(t, entries)
			if _, err := Verify(bytes.NewReader(img)); !errors.Is(err, ErrBadImage) {
				t.Errorf("Verify: %v, want ErrBadImage", err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if _, err := Unpack(bytes.NewReader(img), out, testSeal); !errors.Is(err, ErrBadImage) {
				t.Errorf("Unpack: %v, want ErrBadImage", err)
			}
			if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Unpack left %s behind", out)
			}
		})
	}
	good := linkImage(t, []FileSum{{Name: "parent", Link: "pre.1"}, {Name: "pre.1/pages-1.img"}, {Name: "pre.2/parent", Link: "../pre.1"}})
	if _, err := Unpack(bytes.NewReader(good), filepath.Join(t.TempDir(), "out"), testSeal); err != nil {
		t.Errorf("links inside the image: %v", err)
	}
}
