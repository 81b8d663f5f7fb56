package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// Method is how Discover finds the machine's GPUs (GPU_DISCOVERY).
type Method string

const (
	// Auto uses NVIDIA's devices when /dev has any, else the static
	// list when there is one, else none.
	Auto Method = "auto"
	// NVIDIA uses /dev/nvidia<N>, described by nvidia-smi when it is on
	// the PATH.
	NVIDIA Method = "nvidia"
	// Static uses the administrator's list (GPU_DEVICES) alone.
	Static Method = "static"
	// None advertises no GPU.
	None Method = "none"
)

// Config says how to discover. The zero value discovers automatically
// in /dev.
type Config struct {
	Method Method // default Auto
	// Static is the administrator's list (GPU_DEVICES): ClassAd records
	// separated by commas, each with Id and DevicePath and any
	// properties, e.g.
	//   [Id = "GPU-0"; DevicePath = "/dev/nvidia0"; Capability = 8.6; GlobalMemoryMb = 24576]
	Static string
	// DevDir is where device nodes are looked for. Default /dev.
	DevDir string
	// SMI is the nvidia-smi program. Default: "nvidia-smi" on the PATH.
	SMI string
}

// smiTimeout bounds nvidia-smi, which hangs on a wedged driver.
const smiTimeout = 30 * time.Second

// nvidiaShared are NVIDIA's nodes every GPU job needs besides its own.
var nvidiaShared = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}

// Discover finds the machine's GPUs as cfg says.
func Discover(ctx context.Context, cfg Config) (Inventory, error) {
	if cfg.DevDir == "" {
		cfg.DevDir = "/dev"
	}
	if cfg.SMI == "" {
		cfg.SMI = "nvidia-smi"
	}
	switch cfg.Method {
	case "", Auto:
		inv, err := discoverNVIDIA(ctx, cfg)
		if err != nil || len(inv.Devices) > 0 || cfg.Static == "" {
			return inv, err
		}
		return parseStatic(cfg.Static)
	case NVIDIA:
		return discoverNVIDIA(ctx, cfg)
	case Static:
		return parseStatic(cfg.Static)
	case None:
		return Inventory{}, nil
	}
	return Inventory{}, fmt.Errorf("GPU discovery %q: want auto, nvidia, static or none", cfg.Method)
}

// parseStatic reads the administrator's list.
func parseStatic(src string) (Inventory, error) {
	var inv Inventory
	if strings.TrimSpace(src) == "" {
		return inv, nil
	}
	e, err := classad.ParseExpr("{" + src + "}")
	if err != nil {
		return inv, fmt.Errorf("GPU_DEVICES: %w", err)
	}
	list, ok := classad.New().EvalExpr(e, nil).ListValue()
	if !ok {
		return inv, errors.New("GPU_DEVICES: not a list of ClassAd records")
	}
	for i, v := range list {
		rec, ok := v.ClassAdValue()
		if !ok {
			return inv, fmt.Errorf("GPU_DEVICES: entry %d is not a [ ... ] record", i+1)
		}
		props := rec.Copy()
		id, _ := props.EvalString("Id")
		path, _ := props.EvalString("DevicePath")
		if path == "" || !filepath.IsAbs(path) {
			return inv, fmt.Errorf("GPU_DEVICES: entry %d (%s) has no absolute DevicePath", i+1, id)
		}
		index := -1
		if n, ok := props.EvalInt("DeviceIndex"); ok {
			index = int(n)
		}
		props.Delete("Id")
		props.Delete("DevicePath")
		inv.Devices = append(inv.Devices, Device{ID: id, Index: index, Path: path, Props: props})
	}
	if err := checkIDs(inv.Devices); err != nil {
		return Inventory{}, fmt.Errorf("GPU_DEVICES: %w", err)
	}
	return inv, nil
}

var nvidiaNode = regexp.MustCompile(`^nvidia([0-9]+)$`)

// discoverNVIDIA lists /dev/nvidia<N> and asks nvidia-smi about them. A
// machine without nvidia-smi still has its devices, without properties;
// one whose nvidia-smi fails is an error, so that a broken driver is seen
// rather than advertised as a machine without GPUs.
func discoverNVIDIA(ctx context.Context, cfg Config) (Inventory, error) {
	var inv Inventory
	nodes, _ := filepath.Glob(filepath.Join(cfg.DevDir, "nvidia*"))
	var minors []int
	for _, n := range nodes {
		if m := nvidiaNode.FindStringSubmatch(filepath.Base(n)); m != nil {
			k, _ := strconv.Atoi(m[1])
			minors = append(minors, k)
		}
	}
	if len(minors) == 0 {
		return inv, nil
	}
	slices.Sort(minors)
	for _, s := range nvidiaShared {
		if p := filepath.Join(cfg.DevDir, s); slices.Contains(nodes, p) {
			inv.Shared = append(inv.Shared, p)
		}
	}
	smi, err := exec.LookPath(cfg.SMI)
	if err != nil {
		for _, k := range minors {
			inv.Devices = append(inv.Devices, Device{ID: "CUDA" + strconv.Itoa(k), Index: k,
				Path: filepath.Join(cfg.DevDir, "nvidia"+strconv.Itoa(k)), Props: classad.New()})
		}
		return inv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, smiTimeout)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, smi, "--query-gpu="+strings.Join(smiFields, ","), "--format=csv,noheader,nounits")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return Inventory{}, fmt.Errorf("nvidia-smi: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	devs, err := parseSMI(out.String(), cfg.DevDir)
	if err != nil {
		return Inventory{}, err
	}
	inv.Devices = devs
	return inv, nil
}

// smiFields are the columns asked of nvidia-smi, in parseSMI's order.
// HTCondor's DriverVersion is CUDA's driver API version, which nvidia-smi
// does not tell; it is left out.
var smiFields = []string{"index", "uuid", "name", "compute_cap", "memory.total", "clocks.max.sm", "pci.bus_id"}

// parseSMI reads nvidia-smi's CSV. The device node of index N is taken to
// be /dev/nvidiaN, which holds where the driver numbers minors in PCI
// order, as it does unless told otherwise.
func parseSMI(out, devDir string) ([]Device, error) {
	var devs []Device
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != len(smiFields) {
			return nil, fmt.Errorf("nvidia-smi: %d fields in %q, want %d", len(f), line, len(smiFields))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		index, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi: index %q: %w", f[0], err)
		}
		id := "CUDA" + f[0]
		if u, ok := strings.CutPrefix(f[1], "GPU-"); ok && len(u) >= 8 {
			id = "GPU-" + u[:8]
		}
		props := classad.New()
		props.SetString("DeviceName", f[2])
		setNumber(props, "Capability", f[3])
		setNumber(props, "GlobalMemoryMb", f[4])
		setNumber(props, "ClockMhz", f[5])
		if f[6] != "" && f[6] != "[N/A]" {
			props.SetString("DevicePciBusId", f[6])
		}
		devs = append(devs, Device{ID: id, Index: index, Path: filepath.Join(devDir, "nvidia"+f[0]), Props: props})
	}
	return devs, checkIDs(devs)
}

// setNumber sets name to s as an integer or a real, and leaves it out if
// nvidia-smi does not know it ("[N/A]").
func setNumber(ad *classad.ClassAd, name, s string) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		ad.SetInt(name, n)
	} else if x, err := strconv.ParseFloat(s, 64); err == nil {
		ad.SetReal(name, x)
	}
}
