// Package classad implements the ClassAd language of the Condor family:
// parsing (new syntax, old syntax and JSON), printing, evaluation with
// three-valued logic, and symmetric matchmaking. The matchmaker, the startd's
// owner policy and the agent all describe jobs and machines with it.
//
// A ClassAd is a set of named expressions. Parsing yields expressions
// (Expr); evaluating them yields values (Value). Match evaluates each ad's
// Requirements with the other ad as TARGET; Rank orders the matches. A
// Matcher does the same without touching shared state, for a negotiator
// that matches many pairs per second: matching the Figure 12 ads of "Condor
// and the Grid" allocates nothing.
//
// # Syntax
//
//	[ Name = Expr; ... ]         new syntax (Parse); semicolons may be left out
//	Name = Expr                  old syntax, one per line (ParseOld)
//	{"Name": 1, "E": "\/Expr(a + 1)\/"}   HTCondor's JSON (MarshalJSON)
//
// Printing reproduces the source's parentheses and spelling of names, and
// what is printed parses back to the same expression. Reals always print
// with a decimal point or an exponent. Nesting deeper than MaxNesting, or
// operator and selection chains making a tree deeper than 16384 levels, is
// refused with a SyntaxError naming the position and what was expected.
//
// Expressions are prepared when parsed: attribute names are hashed,
// constant subexpressions folded, parentheses kept out of the evaluation
// path, constant regular expressions compiled, and MY./TARGET. selections
// resolved without building intermediate values.
//
// # Where Harrier follows HTCondor over the 2001 thesis
//
// The thesis (Raman, "Matchmaking Frameworks for Distributed Resource
// Management") is the model; where today's HTCondor libclassad behaves
// differently, this package does what HTCondor does:
//
//   - && and || short-circuit: false && error is false, true || error is
//     true (the thesis makes both error).
//   - Numbers stand for booleans in &&, ||, ! and ?: (non-zero is true), so
//     1 && true is true; a string or list there is error. (Thesis: error.)
//   - Booleans are promoted to integers in arithmetic and comparison:
//     true + 1 is 2 and true == 1 is true. (Thesis: error.)
//   - == and the other comparisons compare strings ignoring case;
//     =?= and =!= (also spelled is and isnt) compare case-sensitively,
//     never yield undefined, and distinguish 1 from 1.0.
//   - Integers are 64-bit (thesis: 32); overflow wraps. Division and modulo
//     truncate toward zero; division or modulo by zero, integer or real, is
//     error.
//   - Shift counts are taken modulo 64; >> is arithmetic, >>> logical.
//   - A list subscript out of range is error (thesis: undefined).
//   - A circular reference ([a = b; b = a]) evaluates to error (thesis:
//     undefined). Evaluation also gives error after 2^20 attribute
//     evaluations, 512 nested references or 64 MiB of built strings, so
//     hostile ads cannot run for ever.
//   - Bare names not found in the ad or its enclosing ads are looked up in
//     the TARGET ad, as libclassad's alternate scope does during matching.
//     MY and self denote the innermost ad, TARGET and other the match
//     partner; parent the enclosing ad; root and .name the outermost ad.
//     Attributes found in the TARGET are evaluated there, with MY and TARGET
//     swapped.
//   - Selecting from a list selects from each element:
//     {[a=1],[a=2]}.a is {1,2}. An ad may be subscripted by a string.
//   - The Elvis operator a ?: b gives b only when a is undefined.
//   - Single quotes delimit attribute names ('odd name'). Absolute and
//     relative times are written absTime("2020-01-02T03:04:05+00:00") and
//     relTime("1+02:03:04") rather than the thesis' quoted literals.
//   - Numbers may carry a B, K, M, G or T factor (2K is 2048.0), as in both;
//     0x is hexadecimal and a leading 0 octal.
//   - Rank values that are booleans count as 1 and 0; other non-numbers
//     rank 0.
//   - strcat and strcmp give error, not undefined, for an undefined
//     argument, as HTCondor documents; other builtins are strict (error,
//     then undefined, wins) unless they are type tests, ifThenElse, the
//     identicalMember family or join, which skips undefined items.
//   - round rounds half to even; int truncates toward zero; floor, ceiling
//     and round return integers.
//   - getMonth and splitTime count months from 1; getDayOfYear from 0.
//   - Regular expressions are Go's RE2, not PCRE: back-references and
//     look-around are not available. Options i, m and s are honoured.
//   - In old syntax a backslash in a string escapes only a double quote, as
//     in HTCondor's old ClassAds; MarshalOld writes strings the same way.
//
// The thesis' names IsMember, CurrentTime, DayTime and TimeZoneOffset are
// accepted besides HTCondor's. Of HTCondor's documented builtins, userHome
// and userMap (which read the pool's configuration), envV1ToV2,
// mergeEnvironment and unresolved are not provided; calling an unknown
// function evaluates to error, as in libclassad.
package classad
