package classad

// ClassAd is a set of named expressions. Names are case-insensitive; the
// original spelling and the insertion order are kept for printing.
//
// A ClassAd is safe for concurrent evaluation; modifying it (Set, Delete,
// Update) must not happen concurrently with any other use.
type ClassAd struct {
	attrs []attr
	// table is an open-addressing index into attrs. A slot holds the top
	// eight bits of the name's hash above i+1 in the low 24 bits; 0 is
	// empty. Its length is a power of two at least 3/2 len(attrs). Four
	// bytes a slot and no hash kept beside each name keep a big pool's
	// ads small.
	table []uint32
	self  adRef
	// scoped is set once an attribute is named like a scope word (self,
	// my, target, other, parent, root), which then shadows the scope; it
	// spares MY.x and TARGET.x a lookup in the usual ads that have none.
	scoped bool
	// context is set on the ad of a Context, whose target TARGET and
	// unresolved names fall back to (see scope.go).
	context bool
}

// MaxAttributes is the most attributes a ClassAd holds; the parsers refuse
// ads with more, and Set panics.
const MaxAttributes = 1<<24 - 1

type attr struct {
	name string
	expr Expr
}

// adRef is a ClassAd as an evaluation scope: the ad and its lexical parent.
// A top-level ad has no parent.
type adRef struct {
	ad     *ClassAd
	parent *adRef
}

// New returns an empty ClassAd.
func New() *ClassAd {
	ad := &ClassAd{}
	ad.self.ad = ad
	return ad
}

// root returns ad as a top-level scope without allocating for ads made by New.
func (ad *ClassAd) root() *adRef {
	if ad.self.ad == ad {
		return &ad.self
	}
	return &adRef{ad: ad}
}

// hashName is FNV-1a over the ASCII-lowercased name.
func hashName(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// equalFold compares ASCII strings ignoring case, as libclassad's strcasecmp
// does. Names usually agree exactly, so it compares eight bytes at a time
// and folds case only in words that differ.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for len(a) >= 8 {
		if load64(a) != load64(b) && !equalFoldBytes(a[:8], b[:8]) {
			return false
		}
		a, b = a[8:], b[8:]
	}
	return equalFoldBytes(a, b)
}

func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// equalFoldBytes is equalFold for strings of equal length, byte by byte.
func equalFoldBytes(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// find returns the index in attrs of the attribute name with hash h, or -1.
func (ad *ClassAd) find(name string, h uint32) int {
	if ad == nil || len(ad.table) == 0 {
		return -1
	}
	mask := uint32(len(ad.table) - 1)
	tag := h >> 24
	for i := h & mask; ; i = (i + 1) & mask {
		slot := ad.table[i]
		if slot == 0 {
			return -1
		}
		if slot>>24 == tag {
			j := int(slot&MaxAttributes) - 1
			if equalFold(ad.attrs[j].name, name) {
				return j
			}
		}
	}
}

// tableSize is the index length for n attributes.
func tableSize(n int) int {
	size := 8
	for 2*size < 3*n {
		size *= 2
	}
	return size
}

// reserve makes room for n attributes in an empty ad.
func (ad *ClassAd) reserve(n int) {
	if n <= 4 || len(ad.attrs) > 0 {
		return
	}
	ad.attrs = make([]attr, 0, n)
	ad.table = make([]uint32, tableSize(n))
}

func (ad *ClassAd) reindex() {
	n := tableSize(len(ad.attrs))
	if len(ad.table) != n {
		ad.table = make([]uint32, n)
	} else {
		clear(ad.table)
	}
	for i := range ad.attrs {
		ad.insertSlot(i, hashName(ad.attrs[i].name))
	}
}

// insertSlot indexes attribute i, whose name hashes to h.
func (ad *ClassAd) insertSlot(i int, h uint32) {
	mask := uint32(len(ad.table) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		if ad.table[j] == 0 {
			ad.table[j] = h>>24<<24 | uint32(i+1)
			return
		}
	}
}

// Set binds name to e, replacing any attribute of the same name (ignoring
// case). A replaced attribute keeps its position and its original spelling.
// It panics if ad would hold more than MaxAttributes.
func (ad *ClassAd) Set(name string, e Expr) {
	if ad.self.ad == nil {
		ad.self.ad = ad
	}
	h := hashName(name)
	if i := ad.find(name, h); i >= 0 {
		ad.attrs[i].expr = e
		return
	}
	if len(ad.attrs) >= MaxAttributes {
		panic("classad: more than MaxAttributes attributes")
	}
	ad.attrs = append(ad.attrs, attr{name: name, expr: e})
	if _, ok := scopeWord(name); ok {
		ad.scoped = true
	}
	if 2*len(ad.table) < 3*len(ad.attrs) {
		ad.reindex()
	} else {
		ad.insertSlot(len(ad.attrs)-1, h)
	}
}

// SetValue binds name to the literal v.
func (ad *ClassAd) SetValue(name string, v Value) { ad.Set(name, Literal(v)) }

// SetString binds name to the string s.
func (ad *ClassAd) SetString(name, s string) { ad.SetValue(name, String(s)) }

// SetInt binds name to the integer i.
func (ad *ClassAd) SetInt(name string, i int64) { ad.SetValue(name, Int(i)) }

// SetReal binds name to the real f.
func (ad *ClassAd) SetReal(name string, f float64) { ad.SetValue(name, Real(f)) }

// SetBool binds name to the boolean b.
func (ad *ClassAd) SetBool(name string, b bool) { ad.SetValue(name, Bool(b)) }

// SetExpr parses src as an expression and binds name to it.
func (ad *ClassAd) SetExpr(name, src string) error {
	e, err := ParseExpr(src)
	if err != nil {
		return err
	}
	ad.Set(name, e)
	return nil
}

// Lookup returns the expression bound to name, ignoring case.
func (ad *ClassAd) Lookup(name string) (Expr, bool) {
	i := ad.find(name, hashName(name))
	if i < 0 {
		return Expr{}, false
	}
	return ad.attrs[i].expr, true
}

// Delete removes name, if present.
func (ad *ClassAd) Delete(name string) {
	i := ad.find(name, hashName(name))
	if i < 0 {
		return
	}
	ad.attrs = append(ad.attrs[:i], ad.attrs[i+1:]...)
	ad.reindex()
}

// Len returns the number of attributes.
func (ad *ClassAd) Len() int {
	if ad == nil {
		return 0
	}
	return len(ad.attrs)
}

// Names returns the attribute names in insertion order, as first spelled.
func (ad *ClassAd) Names() []string {
	names := make([]string, len(ad.attrs))
	for i := range ad.attrs {
		names[i] = ad.attrs[i].name
	}
	return names
}

// Copy returns a copy of ad. Expressions are immutable and shared; setting or
// deleting attributes of either ad does not affect the other.
func (ad *ClassAd) Copy() *ClassAd {
	c := &ClassAd{
		attrs:  append([]attr(nil), ad.attrs...),
		table:  append([]uint32(nil), ad.table...),
		scoped: ad.scoped,
	}
	c.self.ad = c
	return c
}

// Update sets every attribute of other into ad.
func (ad *ClassAd) Update(other *ClassAd) {
	for _, a := range other.attrs {
		ad.Set(a.name, a.expr)
	}
}
