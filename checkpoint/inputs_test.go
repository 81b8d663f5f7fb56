package checkpoint

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckInputs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "same"), []byte("12345"), 0o644)
	os.WriteFile(filepath.Join(dir, "grew"), []byte("123456"), 0o644)
	inputs := []Input{
		{Path: "/job/same", Size: 5},
		{Path: "/job/grew", Size: 5},
		{Path: "/job/gone", Size: 5},
		{Path: "/usr/bin/busybox", Size: 1},
	}
	resolve := func(p string) (string, bool) {
		rel, ok := strings.CutPrefix(p, "/job/")
		return filepath.Join(dir, rel), ok
	}
	err := CheckInputs(inputs, resolve)
	var ie *InputsError
	if !errors.Is(err, ErrInputChanged) || !errors.As(err, &ie) {
		t.Fatalf("CheckInputs: %v, want an InputsError", err)
	}
	if len(ie.Changed) != 2 || ie.Changed[0].Path != "/job/grew" || ie.Changed[0].Now != 6 ||
		ie.Changed[1].Path != "/job/gone" || ie.Changed[1].Now != -1 {
		t.Errorf("changed %+v", ie.Changed)
	}
	if !strings.Contains(err.Error(), "/job/grew has 6 bytes, not 5") {
		t.Errorf("message %q", err)
	}
	if err := CheckInputs(inputs[:1], resolve); err != nil {
		t.Errorf("unchanged input: %v", err)
	}
}

// TestProbe checks the pre-copy capability against the kernel's
// configuration: CRIU needs soft-dirty bits (CONFIG_MEM_SOFT_DIRTY),
// which our machines lack.
func TestProbe(t *testing.T) {
	needCRIU(t)
	f, err := Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := kernelConfig(); err == nil {
		if want := strings.Contains(cfg, "\nCONFIG_MEM_SOFT_DIRTY=y\n"); f.PreCopy != want {
			t.Errorf("pre-copy %v, kernel soft-dirty %v", f.PreCopy, want)
		}
	}
	if !f.PreCopy {
		if _, err := PreDump(context.Background(), nil, f, DumpOptions{}); !errors.Is(err, ErrNoPreCopy) {
			t.Errorf("PreDump without pre-copy: %v, want ErrNoPreCopy", err)
		}
	}
}

func kernelConfig() (string, error) {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(zr)
	return string(b), err
}
