package submit

import "strings"

// The parts of a path the $F letters select.
const (
	partExt  = 1 << iota // x: the extension, with its dot
	partName             // n: the file name without extension
	partPath             // p: the whole directory, with its trailing slash
	partDir              // d: the last directory, with its trailing slash (dd: the last two, ...)
)

// pathPart implements $F<letters>(value) as the manual describes it:
//
//	f  make a relative path absolute against dir (the submit directory)
//	p  the directory part, with its trailing slash
//	d  the last directory, with its trailing slash; each further d adds one more
//	n  the file name without its extension
//	x  the extension, with its dot
//	b  bare: no trailing slash for p and d, no dot for x
//	u  use / as separator; w use \
//	q  quote the result in double quotes; with a, in single quotes
//
// Quotes around the value are removed first. With no part letter the whole
// value is returned. A value with no directory has no p or d part when n
// or x is asked for, as in condor_submit.
func pathPart(v, letters, dir string) string {
	parts, dirs := 0, 0
	var quote, sep byte
	var full, bare, single bool
	for i := 0; i < len(letters); i++ {
		switch letters[i] | 0x20 {
		case 'x':
			parts |= partExt
		case 'n':
			parts |= partName
		case 'p':
			parts |= partPath
		case 'd':
			parts |= partDir
			dirs++
		case 'a':
			single = true
		case 'b':
			bare = true
		case 'f':
			full = true
		case 'w':
			sep = '\\'
		case 'u':
			sep = '/'
		case 'q':
			quote = '"'
		}
	}
	if quote != 0 && single {
		quote = '\''
	}
	v = unquote(v)
	if full && dir != "" && !strings.HasPrefix(v, "/") {
		if len(v) > 2 && v[0] == '.' && v[1] == '/' {
			v = v[2:]
		}
		v = strings.TrimSuffix(dir, "/") + "/" + v
	}
	if sep == '/' {
		v = strings.ReplaceAll(v, `\`, "/")
	} else if sep == '\\' {
		v = strings.ReplaceAll(v, "/", `\`)
	}
	ixn := strings.LastIndexAny(v, `/\`) + 1 // start of the file name
	ixx := len(v)                            // start of the extension
	if dot := strings.LastIndexByte(v[ixn:], '.'); dot >= 0 {
		ixx = ixn + dot
	}
	if ixn == 0 && parts&(partName|partExt) != 0 {
		parts &^= partPath | partDir
	}
	var out string
	switch parts {
	case partExt:
		out = v[ixx:]
		if bare && ixx < len(v) {
			out = out[1:]
		}
	case partName | partExt:
		out = v[ixn:]
	case partName:
		out = v[ixn:ixx]
	case 0, partPath | partName | partExt, partPath | partExt:
		out = v
	case partPath:
		out = v[:ixn]
		if bare && ixn > 0 {
			out = v[:ixn-1]
		}
	case partPath | partName:
		out = v[:ixx]
	default: // d, alone or with others
		if ixn == 0 {
			break
		}
		start := dirsStart(v, dirs)
		switch parts & (partName | partExt) {
		case partName:
			out = v[start:ixx]
		case 0:
			end := ixn
			if bare {
				end--
			}
			out = v[start:max(end, start)]
		default:
			out = v[start:]
		}
	}
	if quote != 0 {
		out = string(quote) + out + string(quote)
	}
	return out
}

// dirsStart returns where the last n directories of path begin.
func dirsStart(path string, n int) int {
	var seps []int
	for i := 0; i < len(path); i++ {
		if path[i] == '/' || path[i] == '\\' {
			seps = append(seps, i+1)
		}
	}
	if n >= len(seps) {
		return 0
	}
	return seps[len(seps)-1-n]
}

// unquote removes one pair of matching double or single quotes around s.
func unquote(s string) string {
	if len(s) > 1 && s[0] == s[len(s)-1] && (s[0] == '"' || s[0] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
