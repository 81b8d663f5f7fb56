package gpu

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStaticList(t *testing.T) {
	inv, err := Discover(context.Background(), Config{Method: Static, Static: `
		[Id = "GPU-0"; DevicePath = "/dev/fake0"; Capability = 8.6; GlobalMemoryMb = 24576; DeviceName = "Fake"],
		[Id = "GPU-1"; DevicePath = "/dev/fake1"; Capability = 7.5; GlobalMemoryMb = 24576; DeviceName = "Fake"]`})
	if err != nil {
		t.Fatal(err)
	}
	if got := IDs(inv.Devices); !slices.Equal(got, []string{"GPU-0", "GPU-1"}) {
		t.Fatalf("IDs = %v", got)
	}
	if inv.Devices[1].Path != "/dev/fake1" {
		t.Errorf("path = %q", inv.Devices[1].Path)
	}
	if _, ok := inv.Devices[0].Props.Lookup("Id"); ok {
		t.Error("Id is left among the properties")
	}
	c := Common(inv.Devices)
	if _, ok := c["Capability"]; ok {
		t.Errorf("Capability differs between the devices but is common: %v", c)
	}
	if v, _ := c["GlobalMemoryMb"].IntValue(); v != 24576 {
		t.Errorf("common GlobalMemoryMb = %v", c["GlobalMemoryMb"])
	}
	if s, _ := c["DeviceName"].StringValue(); s != "Fake" {
		t.Errorf("common DeviceName = %v", c["DeviceName"])
	}
}

func TestStaticListRefused(t *testing.T) {
	for _, src := range []string{
		`[Id = "GPU-0"]`, // no device path
		`[Id = "GPU-0"; DevicePath = "/dev/a"], [Id = "GPU-0"; DevicePath = "/dev/b"]`,
		`[DevicePath = "/dev/a"]`,
		`"GPU-0"`,
		`[Id = `,
	} {
		if _, err := Discover(context.Background(), Config{Method: Static, Static: src}); err == nil {
			t.Errorf("%s: accepted", src)
		}
	}
	if _, err := Discover(context.Background(), Config{Method: "cuda"}); err == nil {
		t.Error("unknown method accepted")
	}
}

func TestShare(t *testing.T) {
	ds := []Device{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	got := Share(ds, 2)
	if len(got) != 2 || !slices.Equal(IDs(got[0]), []string{"a", "b"}) || !slices.Equal(IDs(got[1]), []string{"c"}) {
		t.Errorf("Share(3 devices, 2) = %v", got)
	}
	got = Share(ds[:1], 3)
	if len(got[0]) != 1 || len(got[1]) != 0 || len(got[2]) != 0 {
		t.Errorf("Share(1 device, 3) = %v", got)
	}
}

// TestNVIDIA discovers NVIDIA devices in a directory of stand-ins, with a
// stand-in nvidia-smi and without one.
func TestNVIDIA(t *testing.T) {
	dev := t.TempDir()
	for _, n := range []string{"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-modeset"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := Discover(context.Background(), Config{DevDir: dev, SMI: filepath.Join(dev, "no-such-smi")})
	if err != nil {
		t.Fatal(err)
	}
	if got := IDs(inv.Devices); !slices.Equal(got, []string{"CUDA0", "CUDA1"}) {
		t.Errorf("without nvidia-smi: %v", got)
	}
	if !slices.Equal(inv.Shared, []string{filepath.Join(dev, "nvidiactl"), filepath.Join(dev, "nvidia-uvm")}) {
		t.Errorf("shared nodes: %v", inv.Shared)
	}
	if inv.Devices[1].CUDAName() != "1" {
		t.Errorf("CUDA name of CUDA1: %q", inv.Devices[1].CUDAName())
	}

	smi := filepath.Join(t.TempDir(), "nvidia-smi")
	script := "#!/bin/sh\ncat <<'E'\n" +
		"0, GPU-c4a646d7-aa40-11ee-9a4c-0242ac120002, NVIDIA A100-SXM4-40GB, 8.0, 40960, 1410, 00000000:07:00.0\n" +
		"1, GPU-d1810711-aa40-11ee-9a4c-0242ac120002, NVIDIA A100-SXM4-40GB, 8.0, 40960, 1410, 00000000:0F:00.0\n" +
		"E\n"
	if err := os.WriteFile(smi, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	inv, err = Discover(context.Background(), Config{Method: NVIDIA, DevDir: dev, SMI: smi})
	if err != nil {
		t.Fatal(err)
	}
	if got := IDs(inv.Devices); !slices.Equal(got, []string{"GPU-c4a646d7", "GPU-d1810711"}) {
		t.Fatalf("with nvidia-smi: %v", got)
	}
	d := inv.Devices[1]
	if d.Path != filepath.Join(dev, "nvidia1") || d.CUDAName() != "GPU-d1810711" {
		t.Errorf("device 1: %+v", d)
	}
	if c, _ := d.Props.EvalReal("Capability"); c != 8.0 {
		t.Errorf("Capability = %v", c)
	}
	if m, _ := d.Props.EvalInt("GlobalMemoryMb"); m != 40960 {
		t.Errorf("GlobalMemoryMb = %v", m)
	}
	if n, _ := d.Props.EvalString("DeviceName"); n != "NVIDIA A100-SXM4-40GB" {
		t.Errorf("DeviceName = %q", n)
	}

	failing := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho driver mismatch >&2\nexit 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(context.Background(), Config{DevDir: dev, SMI: failing}); err == nil {
		t.Error("a failing nvidia-smi is not an error")
	}
}
