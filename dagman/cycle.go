package dagman

import "strings"

// checkCycles refuses a DAG with a cycle, naming its nodes in order and
// the PARENT line that closes it.
func checkCycles(dag *DAG, edges map[uint64]pos) error {
	const (
		white = iota // not visited
		grey         // on the current path
		black        // done: no cycle through it
	)
	color := make([]uint8, len(dag.Nodes))
	type frame struct {
		n    *Node
		next int // index of the next child to visit
	}
	var stack []frame
	for _, start := range dag.Nodes {
		if color[start.index] != white {
			continue
		}
		stack = append(stack[:0], frame{n: start})
		color[start.index] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(top.n.Children) {
				color[top.n.index] = black
				stack = stack[:len(stack)-1]
				continue
			}
			c := top.n.Children[top.next]
			top.next++
			switch color[c.index] {
			case white:
				color[c.index] = grey
				stack = append(stack, frame{n: c})
			case grey:
				var names []string
				on := false
				for _, f := range stack {
					if f.n == c {
						on = true
					}
					if on {
						names = append(names, f.n.Name)
					}
				}
				names = append(names, c.Name)
				last := stack[len(stack)-1].n
				return edges[uint64(last.index)<<32|uint64(c.index)].errorf(ErrCycle, "%s", strings.Join(names, " -> "))
			}
		}
	}
	return nil
}
