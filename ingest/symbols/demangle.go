package symbols

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the name perf 6.1 prints for the ELF symbol name of a
// user-space DSO: demangle_sym in tools/perf/util/symbol-elf.c, as run
// by perf script with its defaults (symbol_conf.demangle on, verbose 0).
// Kernel and module symbols are never demangled (demangle_kernel is
// off); ELF and ELFWithDebug apply this to every symbol they load and to
// every synthesized PLT name before "@plt" is appended, so the demangled
// name is the one choose_best_symbol compares.
//
// demangle_sym tries, in order:
//
//  1. bfd_demangle(NULL, name, DMGL_NO_OPTS). perf 6.1 as packaged here
//     is built without libbfd but with HAVE_CPLUS_DEMANGLE_SUPPORT, so
//     this is libiberty's cplus_demangle(name, DMGL_NO_OPTS) in the
//     default auto style: rust_demangle first (legacy "_ZN...17h<hash>E"
//     and v0 "_R" names, hash hidden), then cplus_demangle_v3 ("_Z" and
//     "_GLOBAL_[._$][DI]_" names) without parameter lists, return types,
//     clone suffixes or anything after the encoding (such as
//     "@GLIBC_2.2.5"); a thunk or special name keeps the parameters of
//     the function it names ("virtual thunk to f()"). When that succeeds
//     and the result passes rust_is_mangled (tools/perf/util/
//     demangle-rust.c: ends in "::h" and 16 lower-case hex digits using
//     5 to 15 distinct digits, only [a-zA-Z0-9_.:$] and known $-escapes
//     before), rust_demangle_sym rewrites it in place.
//  2. ocaml_demangle_sym ("caml" + upper case).
//  3. java_demangle_sym(name, JAVA_DEMANGLE_NORET) (demangle-java.c) for
//     names with a ')'.
//
// A name none of them accepts is returned unchanged.
func Demangle(name string) string {
	if d, ok := cplusDemangle(name); ok {
		if rustIsMangled(d) {
			d = rustDemangleSym(d)
		}
		return d
	}
	if d, ok := ocamlDemangle(name); ok {
		return d
	}
	if d, ok := javaDemangle(name); ok {
		return d
	}
	return name
}

// mayDemangle reports whether Demangle might change name: it returns
// every other name unchanged (cplusDemangle takes only names beginning
// with '_', ocamlDemangle "caml" ones, javaDemangle those with a ')').
func mayDemangle(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, "caml") || strings.IndexByte(name, ')') >= 0
}

// cplusDemangle is libiberty's cplus_demangle(name, DMGL_NO_OPTS) in
// auto_demangling style (cplus-dem.c): rust_demangle, then
// cplus_demangle_v3; the Java, GNAT and D demanglers are not tried in
// that style.
func cplusDemangle(name string) (string, bool) {
	if strings.HasPrefix(name, "_R") {
		return rustV0Demangle(name)
	}
	if s, ok := rustLegacyDemangle(name); ok {
		return s, true
	}
	// cplus_demangle_v3 (cp-demangle.c, d_demangle_callback) takes only
	// "_Z..." and "_GLOBAL_" constructor/destructor names; without
	// DMGL_TYPES anything else fails. The Go package also takes clang's
	// "___Z..._block_invoke", which libiberty does not.
	global := len(name) > 10 && strings.HasPrefix(name, "_GLOBAL_") &&
		strings.IndexByte("._$", name[8]) >= 0 && (name[9] == 'D' || name[9] == 'I') && name[10] == '_'
	if !strings.HasPrefix(name, "_Z") && !global {
		return "", false
	}
	a, err := demangle.ToAST(name, demangle.NoParams)
	if err != nil {
		return "", false
	}
	return libibertyString(a)
}

// rustLegacyDemangle is the legacy-mangling half of libiberty's
// rust_demangle_callback (rust-demangle.c) without DMGL_VERBOSE: a
// "_ZN" name of length-prefixed identifiers over [_0-9a-zA-Z$.:@],
// ending in 'E' (a ".suffix" after the 'E' is ignored), whose last
// identifier is "h" and 16 lower-case hex digits using at least 5
// distinct digits. The identifiers but the hash are printed joined by
// "::", with "$...$" escapes decoded, ".." as "::" and a leading '_'
// before a '$' dropped; an unknown escape prints the rest of its
// identifier verbatim.
func rustLegacyDemangle(name string) (string, bool) {
	if !strings.HasPrefix(name, "_ZN") {
		return "", false
	}
	sym := name[3:]
	for i := 0; i < len(sym); i++ {
		c := sym[i]
		if c == '_' || isAlnum(c) || c == '$' || c == '.' || c == ':' || c == '@' {
			continue
		}
		return "", false
	}
	// Strip a ".suffix": drop characters until an 'E' that ends the
	// string or precedes a '.'.
	n := len(sym)
	dotSuffix := true
	for n > 0 && !(dotSuffix && sym[n-1] == 'E') {
		dotSuffix = sym[n-1] == '.'
		n--
	}
	if n == 0 || sym[n-1] != 'E' {
		return "", false
	}
	n--
	if !(n > 19 && sym[n-19:n-16] == "17h") {
		return "", false
	}
	sym = sym[:n]
	var idents []string
	for next := 0; next < len(sym); {
		id, nx, ok := rustLegacyIdent(sym, next)
		if !ok || id == "" {
			return "", false
		}
		idents = append(idents, id)
		next = nx
	}
	if !isLegacyHash(idents[len(idents)-1]) {
		return "", false
	}
	var out strings.Builder
	for i, id := range idents[:len(idents)-1] {
		if i > 0 {
			out.WriteString("::")
		}
		printLegacyIdent(&out, id)
	}
	return out.String(), true
}

// rustLegacyIdent is parse_ident for legacy names: decimal length (no
// leading zeros beyond a lone 0), then that many bytes.
func rustLegacyIdent(sym string, next int) (id string, nx int, ok bool) {
	if next >= len(sym) || !isDigit(sym[next]) {
		return "", 0, false
	}
	l := int(sym[next] - '0')
	next++
	if l != 0 {
		for next < len(sym) && isDigit(sym[next]) {
			l = l*10 + int(sym[next]-'0')
			if l > len(sym) {
				return "", 0, false
			}
			next++
		}
	}
	if l > len(sym)-next {
		return "", 0, false
	}
	return sym[next : next+l], next + l, true
}

// isLegacyHash is is_legacy_prefixed_hash.
func isLegacyHash(id string) bool {
	if len(id) != 17 || id[0] != 'h' {
		return false
	}
	var seen uint16
	for i := 1; i < 17; i++ {
		v := lowerHex(id[i])
		if v < 0 {
			return false
		}
		seen |= 1 << v
	}
	count := 0
	for ; seen != 0; seen >>= 1 {
		count += int(seen & 1)
	}
	return count >= 5
}

// printLegacyIdent is print_ident for legacy names.
func printLegacyIdent(out *strings.Builder, id string) {
	if len(id) >= 2 && id[0] == '_' && id[1] == '$' {
		id = id[1:]
	}
	for len(id) > 0 {
		var n int
		switch id[0] {
		case '$':
			c, l := decodeLegacyEscape(id)
			if c == 0 {
				out.WriteString(id)
				return
			}
			out.WriteByte(c)
			n = l
		case '.':
			if len(id) >= 2 && id[1] == '.' {
				out.WriteString("::")
				n = 2
			} else {
				out.WriteByte('.')
				n = 1
			}
		default:
			n = strings.IndexAny(id, "$.")
			if n < 0 {
				n = len(id)
			}
			out.WriteString(id[:n])
		}
		id = id[n:]
	}
}

// decodeLegacyEscape is decode_legacy_escape: the character of the "$..$"
// escape at the start of e and the escape's length, or 0.
func decodeLegacyEscape(e string) (byte, int) {
	if len(e) < 3 || e[0] != '$' {
		return 0, 0
	}
	e = e[1:]
	var c byte
	escLen := 0
	if e[0] == 'C' {
		escLen, c = 1, ','
	} else if len(e) > 2 {
		escLen = 2
		switch e[:2] {
		case "SP":
			c = '@'
		case "BP":
			c = '*'
		case "RF":
			c = '&'
		case "LT":
			c = '<'
		case "GT":
			c = '>'
		case "LP":
			c = '('
		case "RP":
			c = ')'
		default:
			if e[0] == 'u' && len(e) > 3 {
				escLen = 3
				hi, lo := lowerHex(e[1]), lowerHex(e[2])
				if hi < 0 || lo < 0 || hi > 7 {
					return 0, 0
				}
				c = byte(hi<<4 | lo)
				if c < 0x20 {
					return 0, 0
				}
			}
		}
	}
	if c == 0 || len(e) <= escLen || e[escLen] != '$' {
		return 0, 0
	}
	return c, 2 + escLen
}

// Hash suffix of a Rust legacy name after C++ demangling
// (demangle-rust.c).
const (
	rustHashPrefix = "::h"
	rustHashLen    = 16
)

// rustIsMangled is perf's rust_is_mangled on an already demangled name.
// It and rustDemangleSym are hand-written because they are perf's own
// second pass over the C++ demangler's output (demangle-rust.c), which no
// demangling library applies.
func rustIsMangled(s string) bool {
	if len(s) <= len(rustHashPrefix)+rustHashLen {
		return false
	}
	n := len(s) - (len(rustHashPrefix) + rustHashLen)
	if !isPrefixedHash(s[n:]) {
		return false
	}
	return looksLikeRust(s[:n])
}

// isPrefixedHash is perf's is_prefixed_hash: "::h", 16 lower-case hex
// digits with 5 to 15 distinct digits.
func isPrefixedHash(s string) bool {
	if !strings.HasPrefix(s, rustHashPrefix) {
		return false
	}
	var seen uint16
	for i := len(rustHashPrefix); i < len(rustHashPrefix)+rustHashLen; i++ {
		v := lowerHex(s[i])
		if v < 0 {
			return false
		}
		seen |= 1 << v
	}
	count := 0
	for ; seen != 0; seen >>= 1 {
		count += int(seen & 1)
	}
	return count >= 5 && count <= 15
}

// perfRustEscapes are the escapes perf's rust_demangle_sym knows, in its
// order.
var perfRustEscapes = []struct {
	seq string
	c   byte
}{
	{"$C$", ','}, {"$SP$", '@'}, {"$BP$", '*'}, {"$RF$", '&'},
	{"$LT$", '<'}, {"$GT$", '>'}, {"$LP$", '('}, {"$RP$", ')'},
	{"$u20$", ' '}, {"$u27$", '\''}, {"$u5b$", '['}, {"$u5d$", ']'},
	{"$u7e$", '~'},
}

// looksLikeRust is perf's looks_like_rust.
func looksLikeRust(s string) bool {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '$':
			n := 0
			for _, e := range perfRustEscapes {
				if strings.HasPrefix(s[i:], e.seq) {
					n = len(e.seq)
					break
				}
			}
			if n == 0 {
				return false
			}
			i += n
		case c == '.':
			if strings.HasPrefix(s[i:], "...") {
				return false
			}
			i++
		case isAlnum(c) || c == '_' || c == ':':
			i++
		default:
			return false
		}
	}
	return true
}

// rustDemangleSym is perf's rust_demangle_sym, which rewrites the name in
// place (the escape checks read the original bytes; the '_' check reads
// in[-1], which the output may already have overwritten) and drops the
// "::h<hash>" suffix. An unexpected byte ends the name there.
func rustDemangleSym(s string) string {
	buf := []byte(s)
	in, out := 0, 0
	end := len(buf) - (len(rustHashPrefix) + rustHashLen)
	at := func(i int) byte { // C string: NUL past the end
		if i < len(buf) {
			return buf[i]
		}
		return 0
	}
loop:
	for in < end {
		switch c := buf[in]; {
		case c == '$':
			ok := false
			for _, e := range perfRustEscapes {
				if strings.HasPrefix(string(buf[in:]), e.seq) {
					buf[out] = e.c
					in += len(e.seq)
					out++
					ok = true
					break
				}
			}
			if !ok {
				break loop // pr_err("unexpected escape sequence")
			}
		case c == '_':
			if (in == 0 || buf[in-1] == ':') && at(in+1) == '$' {
				in++
			} else {
				buf[out] = c
				out++
				in++
			}
		case c == '.':
			if at(in+1) == '.' {
				buf[out], buf[out+1] = ':', ':'
				out += 2
				in += 2
			} else {
				buf[out] = '-'
				out++
				in++
			}
		case isAlnum(c) || c == ':':
			buf[out] = c
			out++
			in++
		default:
			break loop // pr_err("unexpected character")
		}
	}
	return string(buf[:out])
}

// Java demangler modes (demangle-java.c).
const (
	javaPrefix = iota
	javaClass
	javaFunc
	javaType
	javaCType
)

var javaBaseTypes = map[byte]string{
	'B': "byte", 'C': "char", 'D': "double", 'F': "float",
	'I': "int", 'J': "long", 'S': "short", 'Z': "boolean",
}

// javaDemangle is perf's java_demangle_sym(str, JAVA_DEMANGLE_NORET):
// the part of str up to its last ')' demangled from MODE_PREFIX into a
// buffer of 3*len(str)+1 bytes, or false on a syntax error.
func javaDemangle(str string) (string, bool) {
	p := strings.LastIndexByte(str, ')')
	if p < 0 {
		return "", false
	}
	maxlen := 3*len(str) + 1
	buf := make([]byte, 0, maxlen)
	// scnprintf(buf+rlen, maxlen-rlen, s): at most maxlen-rlen-1 bytes.
	put := func(s string) {
		if room := maxlen - len(buf) - 1; len(s) > room {
			s = s[:max(room, 0)]
		}
		buf = append(buf, s...)
	}
	mode, array, narg := javaPrefix, 0, 0
	for q := 0; q <= p; q++ {
		if len(buf) == maxlen-1 {
			break
		}
		c := str[q]
		switch c {
		case 'L':
			if mode == javaPrefix || mode == javaType {
				if mode == javaType {
					if narg > 0 {
						put(", ")
					}
					narg++
				}
				if mode == javaPrefix {
					mode = javaClass
				} else {
					mode = javaCType
				}
			} else {
				buf = append(buf, c)
			}
		case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			if mode == javaType {
				if narg > 0 {
					put(", ")
				}
				put(javaBaseTypes[c])
				for ; array > 0; array-- {
					put("[]")
				}
				array = 0
				narg++
			} else {
				buf = append(buf, c)
			}
		case 'V':
			if mode == javaType {
				put("void")
				for ; array > 0; array-- {
					put("[]")
				}
				array = 0
			} else {
				buf = append(buf, c)
			}
		case '[':
			if mode != javaType {
				return "", false
			}
			array++
		case '(':
			if mode != javaFunc {
				return "", false
			}
			buf = append(buf, c)
			mode = javaType
		case ')':
			if mode != javaType {
				return "", false
			}
			buf = append(buf, c)
			narg = 0
		case ';':
			if mode != javaClass && mode != javaCType {
				return "", false
			}
			if q+1 < len(str) && isAlpha(str[q+1]) && mode == javaClass {
				put(".")
			}
			if mode == javaClass {
				mode = javaFunc
			} else {
				mode = javaType
			}
		case '/':
			if mode != javaClass && mode != javaCType {
				return "", false
			}
			put(".")
		default:
			buf = append(buf, c)
		}
	}
	return string(buf), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

func lowerHex(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}
