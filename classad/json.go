package classad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// JSON form, as HTCondor writes it: literals become JSON values (undefined
// is null, lists arrays, nested ads objects) and any other expression the
// string "\/Expr(<expression>)\/". Reals keep a decimal point.

// MarshalJSON encodes ad as a JSON object.
func (ad *ClassAd) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSONAd(&b, ad); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSONAd(b *bytes.Buffer, ad *ClassAd) error {
	b.WriteByte('{')
	for i, a := range ad.attrs {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, a.name)
		b.WriteByte(':')
		if err := writeJSONNode(b, a.expr.n); err != nil {
			return fmt.Errorf("attribute %s: %w", a.name, err)
		}
	}
	b.WriteByte('}')
	return nil
}

func writeJSONNode(b *bytes.Buffer, n node) error {
	switch n := n.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case *litNode:
		if ok, err := writeJSONValue(b, n.v); ok || err != nil {
			return err
		}
	case *foldNode:
		if n.n == 0 { // no parentheses to keep
			return writeJSONNode(b, n.src)
		}
	case *listNode:
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONNode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case *adNode:
		return writeJSONAd(b, n.ad)
	}
	var p printer
	p.node(n)
	writeJSONString(b, "/Expr("+p.String()+")/")
	return nil
}

// writeJSONValue writes v if JSON has a form for it and reports whether it did.
func writeJSONValue(b *bytes.Buffer, v Value) (bool, error) {
	switch v.kind {
	case UndefinedKind:
		b.WriteString("null")
	case BoolKind:
		b.WriteString(strconv.FormatBool(v.b()))
	case IntKind:
		b.WriteString(strconv.FormatInt(v.i(), 10))
	case RealKind:
		f := v.f()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return false, nil
		}
		b.WriteString(formatReal(f))
	case StringKind:
		writeJSONString(b, v.s())
	case ListKind:
		b.WriteByte('[')
		for i, e := range v.elems() {
			if i > 0 {
				b.WriteByte(',')
			}
			if ok, err := writeJSONValue(b, e); err != nil {
				return false, err
			} else if !ok {
				var p printer
				p.value(e)
				writeJSONString(b, "/Expr("+p.String()+")/")
			}
		}
		b.WriteByte(']')
	case AdKind:
		return true, writeJSONAd(b, v.scope().ad)
	default:
		return false, nil
	}
	return true, nil
}

// writeJSONString writes s as a JSON string, escaping '/' as "\/" the way
// HTCondor does so that the "\/Expr(" marker survives.
func writeJSONString(b *bytes.Buffer, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail for a string
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	b.Write(bytes.ReplaceAll(out, []byte("/"), []byte(`\/`)))
}

// UnmarshalJSON replaces ad's contents with the attributes of a JSON
// object, in the object's key order. Strings of the form "/Expr(...)/" are
// parsed as expressions.
func (ad *ClassAd) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("classad json: %w", err)
	}
	if t != json.Delim('{') {
		return fmt.Errorf("classad json: want an object, have %v", t)
	}
	parsed, err := jsonObject(dec, 0)
	if err != nil {
		return fmt.Errorf("classad json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("classad json: data after the object")
	}
	*ad = ClassAd{}
	ad.self.ad = ad
	ad.Update(parsed)
	return nil
}

// jsonObject reads the members of an object whose '{' has been consumed.
func jsonObject(dec *json.Decoder, depth int) (*ClassAd, error) {
	ad := New()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string) // object keys are always strings
		n, err := jsonValue(dec, depth)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", key, err)
		}
		ad.Set(key, Expr{n})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	return ad, nil
}

func jsonValue(dec *json.Decoder, depth int) (node, error) {
	if depth > MaxNesting {
		return nil, fmt.Errorf("nesting deeper than %d levels", MaxNesting)
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case nil:
		return &litNode{}, nil
	case bool:
		return &litNode{v: Bool(t)}, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return &litNode{v: Int(i)}, nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", t, err)
		}
		return &litNode{v: Real(f)}, nil
	case string:
		if src, ok := strings.CutPrefix(t, "/Expr("); ok {
			if src, ok := strings.CutSuffix(src, ")/"); ok {
				e, err := ParseExpr(src)
				if err != nil {
					return nil, err
				}
				return e.n, nil
			}
		}
		return &litNode{v: String(t)}, nil
	case json.Delim:
		if t == '{' {
			inner, err := jsonObject(dec, depth+1)
			if err != nil {
				return nil, err
			}
			return &adNode{ad: inner}, nil
		}
		l := &listNode{}
		for dec.More() {
			n, err := jsonValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			l.elems = append(l.elems, n)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}
