package gang

import (
	"errors"
	"fmt"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
)

// MaxPorts is the most ports an ad may declare. A gang's search is
// exponential in its ports in the worst case (the thesis's 5! example), so
// a hostile or mistaken ad is refused rather than searched.
const MaxPorts = 32

// ErrPorts is wrapped by every error about an ad's Ports.
var ErrPorts = errors.New("bad Ports")

// PortsError says what is wrong with an ad's Ports, and in which port
// (Port is -1 for the list as a whole).
type PortsError struct {
	Port   int
	Reason string
}

func (e *PortsError) Error() string {
	if e.Port < 0 {
		return "Ports: " + e.Reason
	}
	return fmt.Sprintf("Ports: port %d: %s", e.Port, e.Reason)
}

// Unwrap makes every PortsError match ErrPorts.
func (e *PortsError) Unwrap() error { return ErrPorts }

// Port is one docking interface of an ad: a label that names the
// candidate docked there, attributes describing the ad to that candidate,
// and the constraint and preference that choose it.
type Port struct {
	// Label names the partner docked at the port, as written. The implicit
	// port of an ad without Ports is labelled other.
	Label string
	// Ad holds the port's own attributes; nil for the implicit port,
	// whose attributes are the ad's.
	Ad *classad.ClassAd
	// Constraint is the name of the attribute that holds the port's
	// constraint, Requirements or else Constraint; empty if there is none
	// (the port then docks with nothing).
	Constraint string
	// Rank is the name of the port's Rank attribute, empty if it has none.
	Rank string
}

// Implicit reports whether p is the implicit port of an ad without Ports.
func (p Port) Implicit() bool { return p.Ad == nil }

// own returns the ad that holds the port's attributes.
func (p Port) own(ad *classad.ClassAd) *classad.ClassAd {
	if p.Ad == nil {
		return ad
	}
	return p.Ad
}

// reserved are names a label may not take: the scope words that would
// change meaning and the literal keywords.
var reserved = map[string]bool{
	"self": true, "my": true, "parent": true, "root": true,
	"true": true, "false": true, "undefined": true, "error": true, "is": true, "isnt": true,
}

// ParsePorts returns the ports of ad. An ad without a Ports attribute has
// one implicit port labelled other, whose constraint is the ad's
// Requirements (or Constraint). Ports must be a non-empty list of at most
// MaxPorts ads, each with a Label that is a bare name, distinct from the
// other labels ignoring case, and a Requirements or Constraint.
func ParsePorts(ad *classad.ClassAd) ([]Port, error) {
	if _, ok := ad.Lookup("Ports"); !ok {
		return []Port{{Label: "other", Constraint: constraintName(ad), Rank: rankName(ad)}}, nil
	}
	v := ad.Eval("Ports")
	elems, ok := v.ListValue()
	if !ok {
		return nil, &PortsError{Port: -1, Reason: "is " + v.Kind().String() + ", not a list of ads"}
	}
	if len(elems) == 0 {
		return nil, &PortsError{Port: -1, Reason: "is empty"}
	}
	if len(elems) > MaxPorts {
		return nil, &PortsError{Port: -1, Reason: fmt.Sprintf("has %d ports, more than %d", len(elems), MaxPorts)}
	}
	ports := make([]Port, len(elems))
	seen := map[string]int{}
	for i, e := range elems {
		pad, ok := e.ClassAdValue()
		if !ok {
			return nil, &PortsError{Port: i, Reason: "is " + e.Kind().String() + ", not an ad"}
		}
		label, why := labelOf(pad)
		if why != "" {
			return nil, &PortsError{Port: i, Reason: why}
		}
		if j, dup := seen[strings.ToLower(label)]; dup {
			return nil, &PortsError{Port: i, Reason: fmt.Sprintf("Label %s is also the label of port %d", label, j)}
		}
		seen[strings.ToLower(label)] = i
		c := constraintName(pad)
		if c == "" {
			return nil, &PortsError{Port: i, Reason: "has no Requirements or Constraint"}
		}
		ports[i] = Port{Label: label, Ad: pad, Constraint: c, Rank: rankName(pad)}
	}
	return ports, nil
}

// labelOf returns the name a port's Label expression is written as, or
// what is wrong with it.
func labelOf(pad *classad.ClassAd) (name, why string) {
	e, ok := pad.Lookup("Label")
	if !ok {
		return "", "Label is missing"
	}
	name = e.String()
	if !exprtext.IsName(name) {
		return "", "Label is " + name + ", not a name"
	}
	if reserved[strings.ToLower(name)] {
		return "", "Label " + name + " is a reserved word"
	}
	return name, ""
}

// constraintName is Requirements, as Harrier's ads spell it, else the
// thesis's Constraint, else empty.
func constraintName(ad *classad.ClassAd) string {
	for _, n := range []string{"Requirements", "Constraint"} {
		if _, ok := ad.Lookup(n); ok {
			return n
		}
	}
	return ""
}

func rankName(ad *classad.ClassAd) string {
	if _, ok := ad.Lookup("Rank"); ok {
		return "Rank"
	}
	return ""
}
