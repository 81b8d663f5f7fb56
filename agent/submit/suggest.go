package submit

import (
	"maps"
	"slices"
)

// suggestions are the names nearestCommand picks from: the commands Harrier
// implements, then those it refuses, so that a misspelt refused command
// leads to its refusal.
var suggestions = append(slices.Clone(commandOrder), slices.Sorted(maps.Keys(refusals))...)

// nearestCommand returns the command whose name is within two edits of name
// (one for names of up to five letters), or "" if there is none; it catches
// misspellings written in any case.
func nearestCommand(name string) string {
	best, bestDist := "", 3
	if len(name) <= 5 {
		bestDist = 2
	}
	for _, c := range suggestions {
		if d := editDistance(name, c, bestDist); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, or limit if it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
