package symbols

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// rustV0Demangle demangles a Rust v0 symbol name ("_R...", the default of
// rustc since 1.9x) as libiberty's rust_demangle does without DMGL_VERBOSE
// (rust-demangle.c as in binutils 2.40): perf 6.1's demangler. It is
// hand-written because github.com/ianlancetaylor/demangle prints v0 names
// otherwise on 1.5 % of the 300,812 of a Rust toolchain's binaries: it
// drops "()" generic arguments, numbers nested closures in the wrong order,
// prints "::" for an unnamed implementation-internal namespace and fails
// on 128-bit constants.
//
// libiberty's choices, kept: instantiating crates, crates' disambiguators
// and impl paths are not printed; a disambiguator is printed only in a
// special namespace ("{closure#1}"); constants wider than 64 bits print as
// "0x" and their hex digits shifted by one (the first left out, the '_'
// after them printed); a '.' and what follows it is ignored; more
// than rustMaxRecursion nested paths, types or constants fail. Unlike
// libiberty it also fails once the output passes rustMaxOutput bytes, as
// backreferences could make it grow without bound.
func rustV0Demangle(name string) (string, bool) {
	if !strings.HasPrefix(name, "_R") {
		return "", false
	}
	sym := name[2:]
	if sym == "" || sym[0] < 'A' || sym[0] > 'Z' {
		return "", false
	}
	for i := 0; i < len(sym); i++ {
		c := sym[i]
		if c == '.' {
			sym = sym[:i]
			break
		}
		if c != '_' && !isAlnum(c) {
			return "", false
		}
	}
	d := rustDemangler{sym: sym}
	d.path(true)
	if !d.failed && d.next < len(d.sym) {
		// The instantiating crate.
		d.skipping = true
		d.path(false)
	}
	if d.failed || d.next != len(d.sym) {
		return "", false
	}
	return d.out.String(), true
}

const (
	rustMaxRecursion = 1024    // RUST_MAX_RECURSION_COUNT
	rustMaxOutput    = 1 << 20 // bytes
)

// rustDemangler is the state of one rustV0Demangle.
type rustDemangler struct {
	sym      string
	next     int
	out      strings.Builder
	failed   bool
	skipping bool // parsing without printing (impl paths, the instantiating crate)
	depth    int  // nested paths, types and constants
	bound    uint64
}

func (d *rustDemangler) peek() byte {
	if d.next < len(d.sym) {
		return d.sym[d.next]
	}
	return 0
}

func (d *rustDemangler) eat(c byte) bool {
	if d.peek() == c {
		d.next++
		return true
	}
	return false
}

// take returns the next byte; at the end it fails.
func (d *rustDemangler) take() byte {
	c := d.peek()
	if c == 0 {
		d.failed = true
	} else {
		d.next++
	}
	return c
}

func (d *rustDemangler) print(s string) {
	if d.failed || d.skipping {
		return
	}
	if d.out.Len()+len(s) > rustMaxOutput {
		d.failed = true
		return
	}
	d.out.WriteString(s)
}

// enter counts one more level of nesting, failing past the limit; leave
// undoes it.
func (d *rustDemangler) enter() bool {
	d.depth++
	if d.depth > rustMaxRecursion {
		d.failed = true
		return false
	}
	return true
}

func (d *rustDemangler) leave() { d.depth-- }

// base62 is parse_integer_62: "_" is 0, else base-62 digits and '_', plus 1.
func (d *rustDemangler) base62() uint64 {
	if d.eat('_') {
		return 0
	}
	var x uint64
	for !d.eat('_') && !d.failed {
		c := d.take()
		x *= 62
		switch {
		case isDigit(c):
			x += uint64(c - '0')
		case 'a' <= c && c <= 'z':
			x += 10 + uint64(c-'a')
		case 'A' <= c && c <= 'Z':
			x += 36 + uint64(c-'A')
		default:
			d.failed = true
			return 0
		}
	}
	return x + 1
}

// optBase62 is parse_opt_integer_62: 0 without tag, else 1 + base62.
func (d *rustDemangler) optBase62(tag byte) uint64 {
	if !d.eat(tag) {
		return 0
	}
	return 1 + d.base62()
}

func (d *rustDemangler) disambiguator() uint64 { return d.optBase62('s') }

// hexNibbles reads lower-case hex digits up to a '_': their count, and
// their value (wrapping past 16 of them).
func (d *rustDemangler) hexNibbles() (n int, v uint64) {
	for !d.eat('_') {
		c := d.take()
		h := lowerHex(c)
		if h < 0 {
			d.failed = true
			return 0, 0
		}
		v = v<<4 | uint64(h)
		n++
	}
	return n, v
}

// rustIdent is an identifier: its ASCII part and punycode deltas.
type rustIdent struct {
	ascii, punycode string
}

// ident is parse_ident: ['u'] decimal length ['_'] bytes.
func (d *rustDemangler) ident() rustIdent {
	puny := d.eat('u')
	c := d.take()
	if !isDigit(c) {
		d.failed = true
		return rustIdent{}
	}
	n := int(c - '0')
	if c != '0' {
		for isDigit(d.peek()) {
			n = n*10 + int(d.take()-'0')
			if n > len(d.sym) {
				d.failed = true
				return rustIdent{}
			}
		}
	}
	d.eat('_')
	if n > len(d.sym)-d.next {
		d.failed = true
		return rustIdent{}
	}
	id := rustIdent{ascii: d.sym[d.next : d.next+n]}
	d.next += n
	if puny {
		i := strings.LastIndexByte(id.ascii, '_')
		id.ascii, id.punycode = id.ascii[:max(i, 0)], id.ascii[i+1:]
		if id.punycode == "" {
			d.failed = true
		}
	}
	return id
}

func (id rustIdent) empty() bool { return id.ascii == "" && id.punycode == "" }

// printIdent prints id, its punycode decoded (RFC 3492).
func (d *rustDemangler) printIdent(id rustIdent) {
	if d.failed || d.skipping {
		return
	}
	if id.punycode == "" {
		d.print(id.ascii)
		return
	}
	out := []rune(id.ascii)
	const base, tMin, tMax, skew = 36, 1, 26, 38
	damp, bias, i, c := 700, 72, 0, rune(0x80)
	for p := 0; p < len(id.punycode); {
		delta, w := 0, 1
		for k := base; ; k += base {
			t := min(max(k-bias, tMin), tMax)
			if p >= len(id.punycode) {
				return // libiberty prints nothing of it
			}
			ch := id.punycode[p]
			p++
			var dg int
			switch {
			case 'a' <= ch && ch <= 'z':
				dg = int(ch - 'a')
			case isDigit(ch):
				dg = 26 + int(ch-'0')
			default:
				d.failed = true
				return
			}
			delta += dg * w
			w *= base - t
			if dg < t {
				break
			}
			if delta > utf8.MaxRune*len(id.punycode) {
				d.failed = true
				return
			}
		}
		n := len(out) + 1
		i += delta
		c += rune(i / n)
		i %= n
		if c > utf8.MaxRune {
			d.failed = true
			return
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = c
		if p == len(id.punycode) {
			break
		}
		i++
		delta /= damp
		damp = 2
		delta += delta / n
		k := 0
		for delta > ((base-tMin)*tMax)/2 {
			delta /= base - tMin
			k += base
		}
		bias = k + ((base-tMin+1)*delta)/(delta+skew)
	}
	d.print(string(out))
}

// lifetime prints lifetime index lt: 0 is '_, others count back from the
// innermost binder's.
func (d *rustDemangler) lifetime(lt uint64) {
	d.print("'")
	if lt == 0 {
		d.print("_")
		return
	}
	depth := d.bound - lt
	if depth < 26 {
		d.print(string(rune('a' + depth)))
	} else {
		d.print("_" + strconv.FormatUint(depth, 10))
	}
}

// binder reads an optional 'G' binder, printing "for<'a, 'b> ".
func (d *rustDemangler) binder() {
	if d.failed {
		return
	}
	n := d.optBase62('G')
	if n == 0 {
		return
	}
	d.print("for<")
	for i := uint64(0); i < n && !d.failed; i++ {
		if i > 0 {
			d.print(", ")
		}
		d.bound++
		d.lifetime(1)
	}
	d.print("> ")
}

// backref runs f at the backreference's target, unless skipping.
func (d *rustDemangler) backref(f func()) {
	to := d.base62()
	if d.skipping || d.failed {
		return
	}
	if to >= uint64(len(d.sym)) {
		d.failed = true
		return
	}
	old := d.next
	d.next = int(to)
	f()
	d.next = old
}

// path is demangle_path; inValue prints generic arguments as "::<...>".
func (d *rustDemangler) path(inValue bool) {
	if d.failed || !d.enter() {
		return
	}
	defer d.leave()
	switch tag := d.take(); tag {
	case 'C':
		d.disambiguator()
		d.printIdent(d.ident())
	case 'N':
		ns := d.take()
		if !('a' <= ns && ns <= 'z' || 'A' <= ns && ns <= 'Z') {
			d.failed = true
			return
		}
		d.path(inValue)
		dis := d.disambiguator()
		id := d.ident()
		if 'A' <= ns && ns <= 'Z' {
			d.print("::{")
			switch ns {
			case 'C':
				d.print("closure")
			case 'S':
				d.print("shim")
			default:
				d.print(string(rune(ns)))
			}
			if !id.empty() {
				d.print(":")
				d.printIdent(id)
			}
			d.print("#" + strconv.FormatUint(dis, 10) + "}")
		} else if !id.empty() {
			d.print("::")
			d.printIdent(id)
		}
	case 'M', 'X', 'Y':
		if tag != 'Y' {
			d.disambiguator()
			was := d.skipping
			d.skipping = true
			d.path(inValue)
			d.skipping = was
		}
		d.print("<")
		d.typ()
		if tag != 'M' {
			d.print(" as ")
			d.path(false)
		}
		d.print(">")
	case 'I':
		d.path(inValue)
		if inValue {
			d.print("::")
		}
		d.print("<")
		d.list(", ", d.genericArg)
		d.print(">")
	case 'B':
		d.backref(func() { d.path(inValue) })
	default:
		d.failed = true
	}
}

// list reads items up to an 'E', printing sep between them, and returns
// how many there were.
func (d *rustDemangler) list(sep string, item func()) int {
	i := 0
	for ; !d.failed && !d.eat('E'); i++ {
		if i > 0 {
			d.print(sep)
		}
		item()
	}
	return i
}

func (d *rustDemangler) genericArg() {
	switch {
	case d.eat('L'):
		d.lifetime(d.base62())
	case d.eat('K'):
		d.constant()
	default:
		d.typ()
	}
}

// rustBasicTypes are the one-letter types.
var rustBasicTypes = [26]string{
	'a' - 'a': "i8", 'b' - 'a': "bool", 'c' - 'a': "char", 'd' - 'a': "f64",
	'e' - 'a': "str", 'f' - 'a': "f32", 'h' - 'a': "u8", 'i' - 'a': "isize",
	'j' - 'a': "usize", 'l' - 'a': "i32", 'm' - 'a': "u32", 'n' - 'a': "i128",
	'o' - 'a': "u128", 'p' - 'a': "_", 's' - 'a': "i16", 't' - 'a': "u16",
	'u' - 'a': "()", 'v' - 'a': "...", 'x' - 'a': "i64", 'y' - 'a': "u64",
	'z' - 'a': "!",
}

func basicType(c byte) string {
	if 'a' <= c && c <= 'z' {
		return rustBasicTypes[c-'a']
	}
	return ""
}

// typ is demangle_type.
func (d *rustDemangler) typ() {
	if d.failed {
		return
	}
	tag := d.take()
	if b := basicType(tag); b != "" {
		d.print(b)
		return
	}
	if !d.enter() {
		return
	}
	defer d.leave()
	switch tag {
	case 'R', 'Q':
		d.print("&")
		if d.eat('L') {
			if lt := d.base62(); lt != 0 {
				d.lifetime(lt)
				d.print(" ")
			}
		}
		if tag == 'Q' {
			d.print("mut ")
		}
		d.typ()
	case 'P':
		d.print("*const ")
		d.typ()
	case 'O':
		d.print("*mut ")
		d.typ()
	case 'A', 'S':
		d.print("[")
		d.typ()
		if tag == 'A' {
			d.print("; ")
			d.constant()
		}
		d.print("]")
	case 'T':
		d.print("(")
		if d.list(", ", d.typ) == 1 {
			d.print(",")
		}
		d.print(")")
	case 'F':
		d.fnType()
	case 'D':
		d.print("dyn ")
		old := d.bound
		d.binder()
		d.list(" + ", d.dynTrait)
		d.bound = old
		if !d.eat('L') {
			d.failed = true
			return
		}
		if lt := d.base62(); lt != 0 {
			d.print(" + ")
			d.lifetime(lt)
		}
	case 'B':
		d.backref(d.typ)
	default:
		d.next-- // the tag is the path's
		d.path(false)
	}
}

// fnType is a function pointer type after its 'F'.
func (d *rustDemangler) fnType() {
	old := d.bound
	defer func() { d.bound = old }()
	d.binder()
	if d.eat('U') {
		d.print("unsafe ")
	}
	if d.eat('K') {
		abi := "C"
		if !d.eat('C') {
			id := d.ident()
			if id.ascii == "" || id.punycode != "" {
				d.failed = true
				return
			}
			abi = strings.ReplaceAll(id.ascii, "_", "-")
		}
		d.print(`extern "` + abi + `" `)
	}
	d.print("fn(")
	d.list(", ", d.typ)
	d.print(")")
	if !d.eat('u') {
		d.print(" -> ")
		d.typ()
	}
}

// openGenerics is demangle_path_maybe_open_generics: a dyn trait's path,
// its generic arguments' '>' left out (reported true) so that its
// associated type bindings can follow.
func (d *rustDemangler) openGenerics() (open bool) {
	if d.failed || !d.enter() {
		return false
	}
	defer d.leave()
	switch {
	case d.eat('B'):
		d.backref(func() { open = d.openGenerics() })
	case d.eat('I'):
		d.path(false)
		d.print("<")
		open = true
		d.list(", ", d.genericArg)
	default:
		d.path(false)
	}
	return open
}

func (d *rustDemangler) dynTrait() {
	if d.failed {
		return
	}
	open := d.openGenerics()
	for d.eat('p') {
		if open {
			d.print(", ")
		} else {
			d.print("<")
		}
		open = true
		d.printIdent(d.ident())
		d.print(" = ")
		d.typ()
	}
	if open {
		d.print(">")
	}
}

// constant is demangle_const: integers, bools and chars.
func (d *rustDemangler) constant() {
	if d.failed || !d.enter() {
		return
	}
	defer d.leave()
	if d.eat('B') {
		d.backref(d.constant)
		return
	}
	switch tag := d.take(); tag {
	case 'p':
		d.print("_")
	case 'h', 't', 'm', 'y', 'o', 'j':
		d.constUint()
	case 'a', 's', 'l', 'x', 'n', 'i':
		if d.eat('n') {
			d.print("-")
		}
		d.constUint()
	case 'b':
		switch n, v := d.hexNibbles(); {
		case n == 1 && v == 0:
			d.print("false")
		case n == 1 && v == 1:
			d.print("true")
		default:
			d.failed = true
		}
	case 'c':
		n, v := d.hexNibbles()
		if n == 0 || n > 8 {
			d.failed = true
			return
		}
		d.print("'")
		switch {
		case v == '\t':
			d.print(`\t`)
		case v == '\r':
			d.print(`\r`)
		case v == '\n':
			d.print(`\n`)
		case v > ' ' && v < '~':
			d.print(string(rune(v)))
		default:
			d.print(`\u{` + strconv.FormatUint(v, 16) + "}")
		}
		d.print("'")
	default:
		d.failed = true
	}
}

// constUint prints an unsigned constant's hex digits in decimal, or
// "0x" and (as libiberty does) the digits but the first and the '_' when
// they do not fit 64 bits.
func (d *rustDemangler) constUint() {
	if d.failed {
		return
	}
	n, v := d.hexNibbles()
	switch {
	case d.failed:
	case n > 16:
		// libiberty prints the n bytes before its position, which
		// is past the '_': all digits but the first, and the '_'.
		d.print("0x" + d.sym[d.next-n:d.next])
	case n > 0:
		d.print(strconv.FormatUint(v, 10))
	default:
		d.failed = true
	}
}
