package dagman

// nodeHeap holds ready nodes, best first by engine.before.
type nodeHeap struct{ a []int }

func (h *nodeHeap) Len() int { return len(h.a) }

func (h *nodeHeap) top() int { return h.a[0] }

func (h *nodeHeap) push(e *engine, i int) {
	h.a = append(h.a, i)
	for c := len(h.a) - 1; c > 0; {
		p := (c - 1) / 2
		if !e.before(h.a[c], h.a[p]) {
			break
		}
		h.a[c], h.a[p] = h.a[p], h.a[c]
		c = p
	}
}

func (h *nodeHeap) pop(e *engine) int {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	for p := 0; ; {
		c := 2*p + 1
		if c >= len(h.a) {
			break
		}
		if c+1 < len(h.a) && e.before(h.a[c+1], h.a[c]) {
			c++
		}
		if !e.before(h.a[c], h.a[p]) {
			break
		}
		h.a[c], h.a[p] = h.a[p], h.a[c]
		p = c
	}
	return top
}
