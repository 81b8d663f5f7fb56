package platform

import "testing"

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]Release{
		"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n": {"Debian12", 12, 1200},
		"ID=ubuntu\nVERSION_ID=\"22.04\"\n":                                              {"Ubuntu22", 22, 2204},
		"ID=\"rocky\"\nVERSION_ID='9.3'\n":                                               {"Rocky9", 9, 903},
		"ID=arch\n":                                                                      {"Arch", 0, 0},
		"VERSION_ID=1\n":                                                                 {"LINUX", 0, 0},
		"":                                                                               {"LINUX", 0, 0},
		"ID=../x\nVERSION_ID=1;rm\n":                                                     {"X1", 1, 100},
	} {
		if got := ParseRelease([]byte(in)); got != want {
			t.Errorf("ParseRelease(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func FuzzParseRelease(f *testing.F) {
	f.Add([]byte("ID=debian\nVERSION_ID=\"12\"\n"))
	f.Add([]byte("ID=\xff\nVERSION_ID=.\n"))
	f.Add([]byte("ID=a\nVERSION_ID=99999999999999999999.999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := ParseRelease(b)
		if got.AndVer == "" || got.MajorVer < 0 || got.Ver < 0 {
			t.Fatalf("ParseRelease(%q) = %+v", b, got)
		}
		for _, r := range got.AndVer {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Fatalf("ParseRelease(%q) = %q: not alphanumeric", b, got.AndVer)
			}
		}
	})
}

func TestArch(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "X86_64", "arm64": "aarch64", "riscv64": "RISCV64", "ppc64le": "ppc64le"} {
		if got := Arch(goarch); got != want {
			t.Errorf("Arch(%q) = %q, want %q", goarch, got, want)
		}
	}
}
