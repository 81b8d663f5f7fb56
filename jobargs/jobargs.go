// Package jobargs reads and writes the argument and environment strings that
// HTCondor keeps in a job's Arguments and Environment attributes.
//
// Both use HTCondor's "V2" syntax: words separated by white space, single
// quotes group a word that contains white space, and two single quotes inside
// a quoted word stand for one literal quote. Environment words are NAME=VALUE.
// The submit language's older forms are converted to this one at submission.
package jobargs

import (
	"fmt"
	"strings"
)

// Split breaks a V2 string into words.
func Split(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		quoted bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				cur.WriteByte('\'')
				i++
				continue
			}
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated single quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// Join is the inverse of Split: it quotes each word that needs it.
func Join(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w != "" && !strings.ContainsAny(w, " \t\n\r'") {
			b.WriteString(w)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(w, "'", "''"))
		b.WriteByte('\'')
	}
	return b.String()
}

// SplitEnv breaks a V2 environment string into NAME=VALUE entries, checking
// that each has a name.
func SplitEnv(s string) ([]string, error) {
	words, err := Split(s)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		if i := strings.IndexByte(w, '='); i <= 0 {
			return nil, fmt.Errorf("environment entry %q is not NAME=VALUE", w)
		}
	}
	return words, nil
}
