package starter

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/transferplugin"
)

// The job's own plugin wins over the machine's, which wins over the
// starter's built-in schemes; a scheme nobody moves is an error naming
// the URL, for the hold reason.
func TestPluginFor(t *testing.T) {
	job := classad.New()
	job.SetString("TransferPlugins", "mine, HTTP = my_plugin.sh; other=sub/o.sh")
	x := &fileTransfer{job: job, scratch: "/scratch", plugins: map[string]string{"demo": "/usr/libexec/demo", "mine": "/usr/libexec/mine"}}
	for scheme, want := range map[string]string{
		"mine": "/scratch/my_plugin.sh", "http": "/scratch/my_plugin.sh", "other": "/scratch/o.sh",
		"demo": "/usr/libexec/demo", "DEMO": "/usr/libexec/demo", "https": "", "file": "",
	} {
		if got, err := x.pluginFor(scheme); err != nil || got != want {
			t.Errorf("pluginFor(%q) = %q, %v; want %q", scheme, got, err, want)
		}
	}
	if _, err := x.pluginFor("nowhere"); err == nil {
		t.Error("pluginFor(nowhere): no error")
	}
}

func TestFetchURLsNamesTheUnsupportedURL(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	x := &fileTransfer{job: classad.New(), scratch: dir, logger: slog.Default()}
	_, _, err = x.fetchURLs(context.Background(), root, []string{"nowhere://h/x.txt"})
	var fe *transferplugin.FileError
	if !errors.As(err, &fe) || fe.URL != "nowhere://h/x.txt" {
		t.Errorf("err %v: want a FileError naming the URL", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the scratch directory: %v", entries)
	}
}
