package gang

import "math/bits"

// bitset is a set of candidate ports, by number.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (s bitset) set(i int)      { s[i>>6] |= 1 << (i & 63) }
func (s bitset) clear(i int)    { s[i>>6] &^= 1 << (i & 63) }
func (s bitset) has(i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }
func (s bitset) and(o bitset) {
	for i := range s {
		s[i] &= o[i]
	}
}
func (s bitset) or(o bitset) {
	for i := range s {
		s[i] |= o[i]
	}
}
func (s bitset) andNotOr(b, o bitset) { // s &= ^b | o
	for i := range s {
		s[i] &= ^b[i] | o[i]
	}
}

func (s bitset) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// next returns the first member at or after i, or -1.
func (s bitset) next(i int) int {
	w := i >> 6
	if w >= len(s) {
		return -1
	}
	x := s[w] >> (i & 63)
	if x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(s); w++ {
		if s[w] != 0 {
			return w<<6 + bits.TrailingZeros64(s[w])
		}
	}
	return -1
}
