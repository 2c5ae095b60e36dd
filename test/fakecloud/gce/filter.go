package gce

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// List filters, as the filter parameter's documentation in the discovery
// document describes them. Two kinds exist and cannot be mixed:
//
//   - AIP-160 expressions: field OP value, OP one of = != > < <= >= :,
//     values quoted or not, "*" wildcards in = and != values, "field:*"
//     to test presence, nested fields ("labels.env", "scheduling.x"),
//     several parenthesised expressions ANDed by juxtaposition, explicit
//     AND, OR and NOT. OR binds tighter than AND, as AIP-160 defines.
//   - Regular expressions: "field eq literal" or "field ne literal" once,
//     unparenthesised (the literal runs to the end, quoted or not), or
//     several parenthesised "(field eq literal)" expressions, ANDed. The
//     literal is an RE2 expression that must match the whole field.
//
// A repeated field matches when any element does (for != and ne: when
// none does). Anything else is refused with 400 invalid, as the API
// refuses expressions it cannot parse.

// filterExpr is a parsed filter.
type filterExpr interface {
	eval(doc map[string]any) bool
}

var errFilter = errors.New("invalid list filter expression")

func parseFilter(src string) (filterExpr, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return nil, nil
	}
	if e, ok, err := parseRegexFilter(src); ok || err != nil {
		return e, err
	}
	toks, err := lexFilter(src)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("%w: unexpected %q", errFilter, p.toks[p.pos].text)
	}
	return e, nil
}

// --- regular-expression filters ---

var (
	fieldRE       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	singleRegexRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)\s+(eq|ne)\s+(.+)$`)
)

// parseRegexFilter recognises the regular-expression form; ok says the
// filter is of that form.
func parseRegexFilter(src string) (filterExpr, bool, error) {
	if !strings.HasPrefix(src, "(") {
		m := singleRegexRE.FindStringSubmatch(src)
		if m == nil {
			return nil, false, nil
		}
		e, err := newRegexTerm(m[1], m[2], m[3])
		return e, true, err
	}
	groups, ok := splitGroups(src)
	if !ok {
		return nil, false, nil
	}
	var terms andExpr
	regexCount := 0
	for _, g := range groups {
		m := singleRegexRE.FindStringSubmatch(strings.TrimSpace(g))
		if m == nil {
			continue
		}
		regexCount++
		e, err := newRegexTerm(m[1], m[2], m[3])
		if err != nil {
			return nil, true, err
		}
		terms = append(terms, e)
	}
	switch {
	case regexCount == 0:
		return nil, false, nil
	case regexCount != len(groups):
		return nil, true, fmt.Errorf("%w: regular expressions mixed with other expressions", errFilter)
	}
	return terms, true, nil
}

// splitGroups splits "(a) (b) (c)" into its groups' contents; ok is false
// unless the whole string is such groups.
func splitGroups(src string) ([]string, bool) {
	var out []string
	for i := 0; i < len(src); {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\n':
			i++
			continue
		case src[i] != '(':
			return nil, false
		}
		depth, quote, j := 0, byte(0), i
		for ; j < len(src); j++ {
			ch := src[j]
			if quote != 0 {
				if ch == '\\' {
					j++
				} else if ch == quote {
					quote = 0
				}
				continue
			}
			if ch == '"' || ch == '\'' {
				quote = ch
			} else if ch == '(' {
				depth++
			} else if ch == ')' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j >= len(src) {
			return nil, false
		}
		out = append(out, src[i+1:j])
		i = j + 1
	}
	return out, len(out) > 0
}

type regexTerm struct {
	field string
	re    *regexp.Regexp
	neg   bool
}

func newRegexTerm(field, op, lit string) (filterExpr, error) {
	if !fieldRE.MatchString(field) {
		return nil, fmt.Errorf("%w: bad field %q", errFilter, field)
	}
	lit = strings.TrimSpace(lit)
	if len(lit) >= 2 && (lit[0] == '"' || lit[0] == '\'') && lit[len(lit)-1] == lit[0] {
		lit = lit[1 : len(lit)-1]
	}
	re, err := regexp.Compile(`^(?:` + lit + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errFilter, err)
	}
	return regexTerm{field: field, re: re, neg: op == "ne"}, nil
}

func (t regexTerm) eval(doc map[string]any) bool {
	v, _ := lookup(doc, t.field)
	hit := false
	for _, s := range scalars(v) {
		if t.re.MatchString(s) {
			hit = true
			break
		}
	}
	return hit != t.neg
}

// --- AIP-160 filters ---

type tokKind int

const (
	tWord tokKind = iota
	tString
	tOp
	tLParen
	tRParen
)

type token struct {
	kind tokKind
	text string
}

func lexFilter(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case ch == '(':
			toks = append(toks, token{tLParen, "("})
			i++
		case ch == ')':
			toks = append(toks, token{tRParen, ")"})
			i++
		case ch == '"' || ch == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != ch; j++ {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("%w: unterminated string", errFilter)
			}
			toks = append(toks, token{tString, b.String()})
			i = j + 1
		case strings.HasPrefix(src[i:], "!=") || strings.HasPrefix(src[i:], "<=") || strings.HasPrefix(src[i:], ">="):
			toks = append(toks, token{tOp, src[i : i+2]})
			i += 2
		case ch == '=' || ch == '<' || ch == '>' || ch == ':':
			toks = append(toks, token{tOp, src[i : i+1]})
			i++
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\n\r()\"'=!<>:", rune(src[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("%w: unexpected %q", errFilter, src[i:i+1])
			}
			toks = append(toks, token{tWord, src[i:j]})
			i = j
		}
	}
	return toks, nil
}

type filterParser struct {
	toks []token
	pos  int
}

func (p *filterParser) peek() (token, bool) {
	if p.pos >= len(p.toks) {
		return token{}, false
	}
	return p.toks[p.pos], true
}

func (p *filterParser) keyword(word string) bool {
	t, ok := p.peek()
	return ok && t.kind == tWord && t.text == word
}

// expr is a sequence of OR-terms, ANDed implicitly or by AND.
func (p *filterParser) expr() (filterExpr, error) {
	var terms andExpr
	for {
		t, ok := p.peek()
		if !ok || t.kind == tRParen {
			break
		}
		if len(terms) > 0 && p.keyword("AND") {
			p.pos++
		}
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: empty expression", errFilter)
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (p *filterParser) or() (filterExpr, error) {
	e, err := p.unary()
	if err != nil {
		return nil, err
	}
	terms := orExpr{e}
	for p.keyword("OR") {
		p.pos++
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (p *filterParser) unary() (filterExpr, error) {
	if p.keyword("NOT") {
		p.pos++
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notExpr{e}, nil
	}
	return p.primary()
}

func (p *filterParser) primary() (filterExpr, error) {
	t, ok := p.peek()
	if !ok {
		return nil, fmt.Errorf("%w: unexpected end", errFilter)
	}
	if t.kind == tLParen {
		p.pos++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if t, ok := p.peek(); !ok || t.kind != tRParen {
			return nil, fmt.Errorf("%w: missing )", errFilter)
		}
		p.pos++
		return e, nil
	}
	if t.kind != tWord || !fieldRE.MatchString(t.text) || t.text == "AND" || t.text == "OR" {
		return nil, fmt.Errorf("%w: expected a field, got %q", errFilter, t.text)
	}
	p.pos++
	op, ok := p.peek()
	if !ok || op.kind != tOp {
		return nil, fmt.Errorf("%w: expected an operator after %q", errFilter, t.text)
	}
	p.pos++
	v, ok := p.peek()
	if !ok || (v.kind != tWord && v.kind != tString) {
		return nil, fmt.Errorf("%w: expected a value after %q", errFilter, t.text+op.text)
	}
	p.pos++
	return compareExpr{field: t.text, op: op.text, value: v.text, quoted: v.kind == tString}, nil
}

type andExpr []filterExpr

func (a andExpr) eval(doc map[string]any) bool {
	for _, e := range a {
		if !e.eval(doc) {
			return false
		}
	}
	return true
}

type orExpr []filterExpr

func (o orExpr) eval(doc map[string]any) bool {
	for _, e := range o {
		if e.eval(doc) {
			return true
		}
	}
	return false
}

type notExpr struct{ e filterExpr }

func (n notExpr) eval(doc map[string]any) bool { return !n.e.eval(doc) }

type compareExpr struct {
	field, op, value string
	quoted           bool
}

func (c compareExpr) eval(doc map[string]any) bool {
	v, present := lookup(doc, c.field)
	if c.op == ":" {
		if c.value == "*" && !c.quoted {
			return present
		}
		if m, ok := v.(map[string]any); ok {
			_, has := m[c.value]
			return has
		}
	}
	vals := scalars(v)
	if c.op == "!=" {
		for _, s := range vals {
			if matchValue(s, c.value) {
				return false
			}
		}
		return true
	}
	for _, s := range vals {
		if c.test(s) {
			return true
		}
	}
	return false
}

func (c compareExpr) test(s string) bool {
	switch c.op {
	case "=", ":":
		return matchValue(s, c.value)
	}
	cmp := 0
	a, errA := strconv.ParseFloat(s, 64)
	b, errB := strconv.ParseFloat(c.value, 64)
	switch {
	case errA == nil && errB == nil:
		switch {
		case a < b:
			cmp = -1
		case a > b:
			cmp = 1
		}
	default:
		cmp = strings.Compare(s, c.value)
	}
	switch c.op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	}
	return false
}

// matchValue compares a field's value with a filter value, where "*" in
// the filter value matches any run of characters.
func matchValue(s, pattern string) bool {
	if !strings.Contains(pattern, "*") {
		return s == pattern
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// lookup resolves a dotted field path in a JSON document.
func lookup(doc map[string]any, field string) (any, bool) {
	var cur any = doc
	for _, part := range strings.Split(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// scalars renders a JSON value as the strings a filter compares: itself,
// or each element of an array. A missing value compares as "".
func scalars(v any) []string {
	switch v := v.(type) {
	case nil:
		return []string{""}
	case string:
		return []string{v}
	case bool:
		return []string{strconv.FormatBool(v)}
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, scalars(e)...)
		}
		return out
	}
	return nil
}
