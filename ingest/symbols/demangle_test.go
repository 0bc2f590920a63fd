package symbols

import (
	"math/rand/v2"
	"testing"
)

// TestDemangle checks Demangle against names perf 6.1 printed on this
// machine (libstdc++ and g++ -O2 programs; see the live tests in
// ingest/attrib) and against perf's and libiberty's rules.
func TestDemangle(t *testing.T) {
	tests := []struct{ in, want string }{
		// C++ without parameters (DMGL_NO_OPTS), as perf script printed.
		{"_ZSt15future_categoryv", "std::future_category"},
		{"_ZNSt6locale5facet18_S_create_c_localeERP15__locale_structPKcS2_", "std::locale::facet::_S_create_c_locale"},
		{"_ZNSt11__timepunctIcEC2EPSt17__timepunct_cacheIcEm", "std::__timepunct<char>::__timepunct"},
		{"_ZNSt18__moneypunct_cacheIwLb0EED0Ev", "std::__moneypunct_cache<wchar_t, false>::~__moneypunct_cache"},
		{"_ZNSt9basic_iosIwSt11char_traitsIwEE4initEPSt15basic_streambufIwS1_E", "std::basic_ios<wchar_t, std::char_traits<wchar_t> >::init"},
		// A special name keeps the inner function's parameters.
		{"_ZTv0_n24_NSt13basic_ostreamIwSt11char_traitsIwEED0Ev", "virtual thunk to std::basic_ostream<wchar_t, std::char_traits<wchar_t> >::~basic_ostream()"},
		{"_ZGVZ4mainE1x", "guard variable for main::x"},
		// Operators, const methods.
		{"_ZNK2ns3BoxIdLi8EEclEi", "ns::Box<double, 8>::operator()"},
		{"_ZN2ns3BoxIdLi8EEpLERKS1_", "ns::Box<double, 8>::operator+="},
		// Clone suffixes and anything after the encoding are dropped.
		{"_ZN2ns4spinEmi.constprop.0", "ns::spin"},
		{"_ZN2ns4rareEPKc.cold", "ns::rare"},
		{"_ZN2ns12_GLOBAL__N_19anon_spinEm.isra.0", "ns::(anonymous namespace)::anon_spin"},
		{"_Z3foov@GLIBCXX_3.4", "foo"},
		// libiberty's argument lists (libibertyString), as c++filt -p -i
		// of binutils 2.40 and perf 6.1 (a V8 symbol) printed them: an
		// empty pack after an argument ending in '>' leaves the list's
		// '>' unspaced; one before an argument keeps its ", ".
		{"_ZN2v88internal28CFunctionBuilderWithFunctionINS_16CTypeInfoBuilderIvJEEEJNS2_INS_5LocalINS_5ValueEEEJEEEEE5BuildEv", "v8::internal::CFunctionBuilderWithFunction<v8::CTypeInfoBuilder<void>, v8::CTypeInfoBuilder<v8::Local<v8::Value>> >::Build"},
		{"_Z1fIN1AIiEEJEEvv", "f<A<int>>"},
		{"_Z1fIJN1AIiEEJEEEvv", "f<A<int>>"},
		{"_Z1fIJEN1AIiEEEvv", "f<, A<int> >"},
		{"_ZN1AIJEEC2Ev", "A<>::A"},
		// The address of a function keeps its type unless its name is
		// qualified.
		{"_Z1fIXadL_Z1gvEEEvv", "f<&(g())>"},
		{"_Z1fIXadL_ZN1A1gEvEEEvv", "f<&A::g>"},
		{"_Z1fIXadL_Z1gIiEvvEEEvv", "f<&(void g<int>())>"},
		{"_Z1fIXadL_ZNK1A1gEvEEEvv", "f<&(A::g() const)>"},
		{"_ZN4node10StreamBase8JSMethodIXadL_ZNS0_11WriteStringILNS_8encodingE0EEEiRKN2v820FunctionCallbackInfoINS4_5ValueEEEEEEEvS9_", "node::StreamBase::JSMethod<&(int node::StreamBase::WriteString<(node::encoding)0>(v8::FunctionCallbackInfo<v8::Value> const&))>"},
		// A constructor or destructor of an unnamed type or a lambda is
		// named after the last source name (ICU has such).
		{"_ZN6icu_726number4impl10MicroPropsUt_D1Ev", "icu_72::number::impl::MicroProps::{unnamed type#1}::~MicroProps"},
		{"_ZN1AIiEUt_C2Ev", "A<int>::{unnamed type#1}::A"},
		{"_ZNSaIcEUt_C1Ev", "std::allocator<char>::{unnamed type#1}::allocator"},
		{"_ZN1AUt_Ut0_C1Ev", "A::{unnamed type#1}::{unnamed type#2}::A"},
		{"_ZZ1fvEN1AUlvE_D2Ev", "f()::A::{lambda()#1}::~A"},
		// Template parameter declarations (clang 17+): libiberty 2.40
		// does not know them, perf prints the name mangled.
		{"_ZNSt4pairIN4llvm18BinaryStreamReaderES1_EC2IRS1_S4_TnNSt9enable_ifIXaaclsr5_PCCPE22_MoveConstructiblePairIT_T0_EEclsr5_PCCPE30_ImplicitlyMoveConvertiblePairIS6_S7_EEEbE4typeELb1EEEOS6_OS7_", "_ZNSt4pairIN4llvm18BinaryStreamReaderES1_EC2IRS1_S4_TnNSt9enable_ifIXaaclsr5_PCCPE22_MoveConstructiblePairIT_T0_EEclsr5_PCCPE30_ImplicitlyMoveConvertiblePairIS6_S7_EEEbE4typeELb1EEEOS6_OS7_"},
		// Not mangled: unchanged.
		{"main", "main"},
		{"_GLOBAL__sub_I_main", "_GLOBAL__sub_I_main"},
		{"_Z", "_Z"},
		{"___Z3foov_block_invoke", "___Z3foov_block_invoke"}, // clang blocks: not libiberty
		// Rust legacy (libiberty rust_demangle): hash hidden, escapes.
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"_ZN4core3fmt5write17h0123456789abcdefE.llvm.1234", "core::fmt::write"},
		{"_ZN59_$LT$core..fmt..Arguments$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE", "<core::fmt::Arguments as core::fmt::Display>::fmt"},
		{"_ZN3foo28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE", "foo::{{closure}}"},
		// Fewer than 5 distinct hash digits: not Rust; C++ demangles it
		// and rust_is_mangled (5..15 digits) rejects it too.
		{"_ZN3foo17h0000000000000000E", "foo::h0000000000000000"},
		// All 16 digits: Rust for libiberty, not for perf's check.
		{"_ZN3foo3bar17h0123456789abcdefE", "foo::bar"},
		// OCaml and Java fallbacks.
		{"camlStdlib__list__map_123", "Stdlib.list.map_123"},
		{"Ljava/lang/String;length()I", "java.lang.String.length()"},
		{"LFoo;bar(ILjava/lang/Object;[J)V", "Foo.bar(int, java.lang.Object, long[])"},
		{"main.(*T).Method", "main.(*T).Method"},
	}
	for _, tc := range tests {
		if got := Demangle(tc.in); got != tc.want {
			t.Errorf("Demangle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRustDemangleSym covers perf's in-place rewrite of a C++-demangled
// legacy Rust name (demangle-rust.c).
func TestRustDemangleSym(t *testing.T) {
	tests := []struct {
		in        string
		isMangled bool
		want      string
	}{
		{"core::fmt::write::h0123456789abcdee", true, "core::fmt::write"},
		{"_$LT$a..B$u20$as$u20$c..D$GT$::f::h0123456789abcdee", true, "<a::B as c::D>::f"},
		{"a.b::f::h0123456789abcdee", true, "a-b::f"},
		{"a::f::h0000000000000000", false, ""},       // 1 distinct digit
		{"a::f::h0123456789abcdef", false, ""},       // 16 distinct digits
		{"a$u3b$b::f::h0123456789abcdee", false, ""}, // unknown escape
		{"a...b::f::h0123456789abcdee", false, ""},
		{"f::h0123", false, ""},
	}
	for _, tc := range tests {
		if got := rustIsMangled(tc.in); got != tc.isMangled {
			t.Errorf("rustIsMangled(%q) = %v", tc.in, got)
		}
		if tc.isMangled {
			if got := rustDemangleSym(tc.in); got != tc.want {
				t.Errorf("rustDemangleSym(%q) = %q, want %q", tc.in, got, tc.want)
			}
		}
	}
}

// TestMayDemangle: Demangle returns every name mayDemangle rejects
// unchanged, so that tables may keep such names as they are. Names are
// the demangler's test inputs with their first bytes changed, and random
// strings over the bytes mangled names use.
func TestMayDemangle(t *testing.T) {
	const alphabet = "_ZNRSEIvcmlCDabhgsx0123456789$.:()[]<>,@ caml"
	rng := rand.New(rand.NewPCG(1, 2))
	var names []string
	for range 20000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, s := range []string{"_ZSt15future_categoryv", "_ZN4core3fmt5write17h0123456789abcdefE", "_RNvCs1234_7mycrate3foo",
		"camlStdlib__list_map_123", "Ljava/lang/Object;toString()Ljava/lang/String;", "_GLOBAL__sub_I_main"} {
		for i := range 3 {
			names = append(names, s, s[i:], "x"+s, "Z"+s[1:], "cam"+s)
		}
	}
	rejected, changed := 0, 0
	for _, n := range names {
		d := Demangle(n)
		if d != n {
			changed++
		}
		if mayDemangle(n) {
			continue
		}
		rejected++
		if d != n {
			t.Errorf("Demangle(%q) = %q, but mayDemangle rejects it", n, d)
		}
	}
	if rejected < 1000 || changed < 10 {
		t.Fatalf("%d names rejected, %d changed by Demangle: the inputs test nothing", rejected, changed)
	}
}

// chooseBest answers as it would with both names demangled first, when
// it leaves them mangled (samePrintedName) and when it takes them from
// the names printed before (printedNames) too: on random pairs of
// symbols with one start, names drawn from C and C++ ones, C++ and Rust
// ones that print as SyS or compat_SyS names (one through a '$' escape),
// PLT entries among them, and random sizes and bindings.
func TestChooseBestWithoutDemangling(t *testing.T) {
	names := []string{
		"main", "_start", "__libc_start_main", "SyS_read",
		"_Z3fooi", "_Z3foov", "_ZN3foo3barEv", "_ZN5__foo3barEv", "_ZN3foo3barC2Ev", "_ZN3foo3barC1Ev",
		"_Z6SySfoov", "_ZN10compat_SyS3fooEv", "_ZN7$u53$yS3foo17h0123456789abcdefE",
		"_ZN4core3fmt5write17h0123456789abcdefE", "_RNvCs1234_7mycrate3foo", "_Znot_mangled",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	random := func() entry {
		name := names[rng.IntN(len(names))]
		e := entry{start: 0x1000, end: 0x1000 + uint64(rng.IntN(2))*16, name: name, mangled: mayDemangle(name), binding: uint8(rng.IntN(3))}
		if rng.IntN(4) == 0 {
			e.plt, e.mangled = true, true
		}
		return e
	}
	skipped := 0
	printed := make(printedNames) // shared: later pairs find names made before
	for iter := range 20000 {
		a, b := random(), random()
		if iter%3 == 0 { // the same symbol twice, as .symtab and .dynsym give it
			b = a
			b.binding = uint8(rng.IntN(3))
		}
		da, db := a, b
		da.demangle(nil)
		db.demangle(nil)
		want := chooseBest(&da, &db, nil)
		if samePrintedName(&a, &b) {
			skipped++
		}
		if got := chooseBest(&a, &b, printed); got != want {
			t.Fatalf("chooseBest(%+v, %+v) = %v, with both demangled first %v", a, b, got, want)
		}
	}
	if skipped < 1000 {
		t.Errorf("chooseBest left the names mangled %d times of 20000: the test misses that path", skipped)
	}
}
