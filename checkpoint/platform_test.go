package checkpoint

import (
	"runtime"
	"strings"
	"testing"
)

func TestPlatform(t *testing.T) {
	p := Platform()
	if p != Platform() {
		t.Fatalf("Platform is not the same twice: %q", p)
	}
	want := map[string]string{"amd64": "LINUX X86_64 ", "arm64": "LINUX aarch64 "}[runtime.GOARCH]
	if want != "" && !strings.HasPrefix(p, want) {
		t.Errorf("Platform %q, want it to begin %q", p, want)
	}
	// Every amd64 processor has SSE2, which programs use freely.
	if runtime.GOARCH == "amd64" && !strings.Contains(" "+p+" ", " sse2 ") {
		t.Errorf("Platform %q lacks sse2", p)
	}
}
