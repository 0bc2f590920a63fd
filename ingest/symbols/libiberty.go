package symbols

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// libibertyString prints a, a C++ name as github.com/ianlancetaylor/demangle
// parsed it, as libiberty's cplus_demangle prints it (cp-demangle.c as in
// binutils 2.40, which perf 6.1 and c++filt here use). The package's printer
// prints it differently in three places, so a is changed first (it must not
// be printed again).
//
//  1. An argument list (d_print_comp's DEMANGLE_COMPONENT_TEMPLATE_ARGLIST)
//     writes ", " before each argument but the first, and takes it back when
//     the arguments from there on print nothing (empty packs). So an empty
//     argument before a printed one keeps its ", " ("f<, A<int> >"), and
//     after empty arguments at the end the last character libiberty
//     remembers is that ", "'s space: the list's '>' gets no space before
//     it even after an argument ending in '>' ("f<A<int>>"; V8's and LLVM's
//     templates with parameter packs). The package skips empty arguments and
//     spaces the '>' ("f<A<int> >").
//  2. The address of a function ("ad") drops the function's type only when
//     its name is qualified (a QUAL_NAME): "&A::g", but "&(g())" and
//     "&(void A::g<int>())". The package drops it whatever the name.
//  3. A constructor or destructor is named after the last source name
//     parsed (d_ctor_dtor_name's di->last_name), which an unnamed type or
//     a lambda is not: "A::{unnamed type#1}::~A" (ICU has such), where the
//     package names it after the unnamed type (libibertyCtorName).
//
// All are rewritten into what the package prints as libiberty does, with
// two marker characters no name holds, removed from the result.
//
// libiberty 2.40 also fails on what the ABI gained after it (GCC 14's
// demangler): template parameter declarations ("Tn", "Ty", "Tt", "Tk",
// "Tp", which clang 17 and later emit in names of templates with a
// constrained or non-type parameter), constraints and requires-clauses
// ("Q", "rq"), explicit object parameters ("H") and _BitInt ("DB", "DU").
// perf prints such names mangled; so does Demangle (ok false). Of
// libLLVM 22's 172,588 names, 269 are such.
func libibertyString(a demangle.AST) (s string, ok bool) {
	marked, newer := false, false
	a.Traverse(func(n demangle.AST) bool {
		switch n := n.(type) {
		case *demangle.TypeTemplateParam, *demangle.NonTypeTemplateParam, *demangle.TemplateTemplateParam,
			*demangle.ConstrainedTypeTemplateParam, *demangle.TemplateParamPack,
			*demangle.Constraint, *demangle.RequiresExpr, *demangle.ExplicitObjectParameter, *demangle.BitIntType:
			newer = true
			return false
		case *demangle.Template:
			if args, ok := libibertyArgs(n.Args); ok {
				n.Args, marked = args, true
			}
		case *demangle.Qualified:
			libibertyCtorName(n)
		case *demangle.Unary:
			if op, ok := n.Op.(*demangle.Operator); ok && op.Name == "&" {
				if t, ok := n.Expr.(*demangle.Typed); ok {
					if _, ok := t.Type.(*demangle.FunctionType); ok && !isQualName(t.Name) {
						// Printed whole, in parentheses as any
						// expression but a name (d_print_subexpr).
						n.Expr = &demangle.ArgumentPack{Args: []demangle.AST{t}}
					}
				}
			}
		}
		return !newer
	})
	if newer {
		return "", false
	}
	s = demangle.ASTToString(a)
	if marked {
		s = strings.ReplaceAll(s, ", "+markTrailing, "")
		s = strings.ReplaceAll(s, markEmpty, "")
	}
	return s, true
}

const (
	// markEmpty stands for an empty argument libiberty writes ", " after.
	markEmpty = "\x00"
	// markTrailing stands for the empty arguments that end a list; it and
	// the ", " before it are removed.
	markTrailing = "\x01"
)

// libibertyCtorName renames the constructor or destructor q names, of an
// unnamed type or a lambda, after the source name before them in q's
// scope, as libiberty does: the scope's last named component, past other
// unnamed types and lambdas and a template's arguments (d_template_args
// keeps di->last_name). A scope that is a local name's function is left
// alone: its parameters' names would count too.
func libibertyCtorName(q *demangle.Qualified) {
	var name *demangle.AST
	switch n := q.Name.(type) {
	case *demangle.Constructor:
		name = &n.Name
	case *demangle.Destructor:
		name = &n.Name
	default:
		return
	}
	if !isUnnamed(*name) {
		return
	}
	for s := q.Scope; ; {
		switch sc := s.(type) {
		case *demangle.Qualified:
			if sc.LocalName {
				return
			}
			if !isUnnamed(sc.Name) {
				s = sc.Name
				continue
			}
			s = sc.Scope
		case *demangle.Template:
			s = sc.Name
		case *demangle.Name:
			*name = sc
			return
		default:
			return
		}
	}
}

func isUnnamed(n demangle.AST) bool {
	switch n.(type) {
	case *demangle.UnnamedType, *demangle.Closure:
		return true
	}
	return false
}

// libibertyArgs returns a template's arguments rewritten as libibertyString
// says, and whether any was. It makes new lists and packs: the old ones may be
// printed elsewhere too (a pack expanded in a parameter list).
func libibertyArgs(args []demangle.AST) ([]demangle.AST, bool) {
	last := lastPrinted(args)
	if last < 0 {
		return args, false // all empty: "<>" either way
	}
	var out []demangle.AST // made at the first change, args up to it copied
	for i, a := range args[:last+1] {
		b := a
		if i < last && isEmptyArg(a) {
			b = &demangle.Name{Name: markEmpty}
		} else if p, ok := a.(*demangle.ArgumentPack); ok {
			// A pack's elements are printed by the package's
			// ArgumentPack with a ", " before each, empty ones
			// too, as libiberty does but at its end.
			if l := lastPrinted(p.Args); l < len(p.Args)-1 {
				b = &demangle.ArgumentPack{Args: append(p.Args[:l+1:l+1], &demangle.Name{Name: markTrailing})}
			}
		}
		if b != a && out == nil {
			out = append(make([]demangle.AST, 0, last+2), args[:i]...)
		}
		if out != nil {
			out = append(out, b)
		}
	}
	if last < len(args)-1 {
		if out == nil {
			out = append(make([]demangle.AST, 0, last+2), args[:last+1]...)
		}
		out = append(out, &demangle.Name{Name: markTrailing})
	}
	return out, out != nil
}

// lastPrinted returns the index of the last argument that prints something,
// -1 if none does.
func lastPrinted(args []demangle.AST) int {
	for i := len(args) - 1; i >= 0; i-- {
		if !isEmptyArg(args[i]) {
			return i
		}
	}
	return -1
}

// isEmptyArg reports whether a prints nothing: the package's own test
// (printState.isEmpty), which it skips arguments by.
func isEmptyArg(a demangle.AST) bool {
	switch a := a.(type) {
	case *demangle.ArgumentPack:
		return lastPrinted(a.Args) < 0
	case *demangle.ExprList:
		return len(a.Exprs) == 0
	case *demangle.PackExpansion:
		return a.Pack != nil && isEmptyArg(a.Base)
	}
	return false
}

// isQualName reports whether n is what libiberty parses as a QUAL_NAME: a
// nested name, not a local one.
func isQualName(n demangle.AST) bool {
	q, ok := n.(*demangle.Qualified)
	return ok && !q.LocalName
}
