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
// and the Grid" allocates nothing. Scope and Context place ads in an
// environment their caller builds, for matching more than two ads at once:
// the gangmatcher (matchmaker/gang) binds each port's labels there to the
// partners' ports, as the thesis's Figure 32 does.
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
// differently, this package does what libclassad does, value for value and
// character for character: a differential test (oracle_test.go) compares
// the two on random expressions over every operator, builtin and kind of
// value, and testdata/oracle holds libclassad's answers, replayed always.
//
//   - Values print as libclassad unparses them: reals with sixteen
//     significant digits, 1.500000000000000E+00 (0.0 and -0.0 as such),
//     unary operators after a space ( -x), =?= and =!= as is and isnt,
//     strings with C escapes and octal for other bytes, the name parent
//     quoted, relative times as relTime("1+01:01:1.5") and UTC as -00:00.
//     A list keeps its element expressions: { a + 1 } prints as written.
//     unparse(attr) lays lists and ads out over lines as libclassad does.
//     Old syntax (MarshalOld) keeps the shortest form of reals.
//   - && and || short-circuit: false && error is false, true || error is
//     true (the thesis makes both error).
//   - Numbers stand for booleans in &&, ||, ! and ?: (non-zero is true), so
//     1 && true is true; a string or list there is error. (Thesis: error.)
//     A Requirements that is a non-zero number matches.
//   - Booleans are promoted to integers in arithmetic and comparison:
//     true + 1 is 2 and true == 1 is true. (Thesis: error.)
//   - == and the other comparisons compare strings ignoring case;
//     =?= and =!= (also spelled is and isnt) compare case-sensitively,
//     never yield undefined, distinguish 1 from 1.0 and are error between
//     two lists or two ads. NaN is not identical to itself.
//   - Integers are 64-bit (thesis: 32); overflow wraps, and the most
//     negative integer divided by -1 is the largest. Division and modulo
//     truncate toward zero; integer division or modulo by zero is error;
//     % of reals is error. Real arithmetic gives -Inf and NaN (-1/0.0,
//     0.0/0.0) but error for +Inf (1/0.0, 1e300*1e300).
//   - << and >> take their count modulo 64; >>> of a negative number masks
//     with -1 << (64 - count), so a count that is a multiple of 64 gives
//     0; a negative number shifted right by a negative count is unchanged
//     and by more than 63 is -1.
//   - Integer literals are read as decimal whatever their spelling: 010 is
//     10 and 0x10 is 0 (libclassad's lexer reads C's forms but converts
//     them as decimal); past the int64 range they are 0. A minus sign
//     written against a number is part of it (-1 is a literal, - 1 a
//     negation). Reals need digits after the point (5. is an error) and
//     take no size suffix (2K is an error).
//   - ?: (Elvis) binds tighter than any other operator and takes postfix
//     expressions: 1 + a ?: 2 is 1 + (a ?: 2); a ?: -x is a syntax error.
//   - A list subscript out of range is error (thesis: undefined); indexes
//     and other C int arguments (substr offsets, interval, the seconds of
//     absolute and relative times) are taken modulo 2^32 as libclassad's
//     int is.
//   - A circular reference ([a = b; b = a]) evaluates to undefined.
//     Evaluation also gives error after 2^20 attribute evaluations, 512
//     nested references or 64 MiB of built strings, so hostile ads cannot
//     run for ever.
//   - Bare names not found in the ad or its enclosing ads are looked up in
//     the TARGET ad, as libclassad's alternate scope does during matching.
//     An attribute named like a scope word (root, parent, self, MY, ...)
//     takes precedence over the scope. MY and self denote the innermost
//     ad, TARGET and other the match partner; parent the enclosing ad;
//     root and .name the outermost ad, which during a match is the match
//     ad around both ads, as in libclassad (there an empty one). Attributes found in the TARGET
//     are evaluated there, with MY and TARGET swapped.
//   - Selecting from a list selects from each element:
//     {[a=1],[a=2]}.a is {1,2} (relative times come out in whole seconds,
//     as libclassad rebuilds them there). An ad may be subscripted by a string,
//     which looks in that ad only.
//   - Single quotes delimit attribute names ('odd name'). Absolute and
//     relative times are written absTime("2020-01-02T03:04:05+00:00") and
//     relTime("1+02:03:04"), read when the expression is parsed (a string
//     that is not a time is a syntax error); relTime("...") evaluates to
//     its seconds as a real, as in libclassad. At run time absTime of a
//     string gives the string back and relTime of one zero seconds.
//   - Builtins treat undefined and error as libclassad's do, which differs
//     from function to function: strcat gives the first of them among its
//     arguments; strcmp, substr, member and versioncmp let undefined win
//     over error; floor, ceiling, round, pow, quantize, interval, the
//     get* time fields and formatTime make undefined error; sum, avg, min
//     and max skip undefined elements, and avg of nothing is 0; join skips
//     undefined items and is undefined when nothing else is left.
//   - int("0x10") and real() read strings as C's strtod does (16, and
//     "12abc" is 12); bool() reads only "true" and "false", any case,
//     and is undefined for other strings. floor, ceiling and round return
//     integers (round to even), converting reals as x86 does (out of range
//     is the most negative integer); pow of integers is an integer.
//   - getMonth and splitTime count months from 1; getDayOfYear from 0; the
//     get* fields read absolute times in UTC and formatTime formats the
//     time's own clock reading.
//   - Regular expressions are Go's RE2, not PCRE: back-references and
//     look-around are not available. Options i, m, s, g and f (regexps:
//     the whole target, substituted) are honoured, in lower case only; a
//     global substitution with a pattern that matches the empty string is
//     error, and a pattern that does not compile matches nothing in
//     regexpMember.
//   - In old syntax a backslash in a string escapes only a double quote, as
//     in HTCondor's old ClassAds; MarshalOld writes strings the same way.
//
// Beyond libclassad, this package provides the functions HTCondor's
// daemons add and document: split, splitUserName, splitSlotName, sprintf,
// the stringList family (stringListSize, stringListSum, stringListAvg,
// stringListMin, stringListMax, stringListMember, stringListIMember,
// stringListSubsetMatch, stringListISubsetMatch, stringListRegexpMember),
// evalInEachContext and countMatches (random, which libclassad has, is
// left out of the comparison because its values are chance). Outside a
// match MY means the
// ad evaluated, as in HTCondor's daemons (libclassad alone binds it to
// nothing). Of HTCondor's documented builtins, userHome and userMap (which
// read the pool's configuration), envV1ToV2, mergeEnvironment and
// unresolved are not provided. Calling an unknown function, or length,
// isMember, currentTime, dayTime, timeZoneOffset or inDays (which
// libclassad does not have either), evaluates to error.
//
// # Known differences from libclassad
//
// The differential test counts these apart, by name, and fails on any
// other disagreement:
//
//   - Ads print their attributes in the order they were set; libclassad
//     prints them in its hash table's order. Comparisons ignore the order
//     of attributes, but strings made from ads (strcat, strcmp, versioncmp
//     of an ad) keep it.
//   - formatTime with a field width such as %5.2f; splitTime and
//     formatTime of times past 32-bit seconds, which libclassad's C
//     library prints as garbage, and splitTime of relative times past a C
//     int.
//   - pow with a fractional exponent may differ in the last digit: Go's
//     Pow is not correctly rounded; whole and half exponents are.
//   - absTime(n, -1) fails libclassad's whole evaluation rather than giving
//     an error value; Harrier follows that, and gives undefined where a
//     selection is made from the failure, but where the failure sits in a
//     subscript that is selected from, libclassad's result has not been
//     matched.
//   - During a match, root and the parent of either ad are the match ad,
//     which in libclassad holds attributes of its own (LEFT, RIGHT,
//     symmetricMatch and six more); Harrier's holds none.
//   - Malformed time strings in absTime("...") and relTime("...") are
//     syntax errors; libclassad reads some of them (absTime("2020") is
//     the last day of 2019).
//   - libclassad ignores what follows the else branch of a conditional at
//     the top of an expression (0 ? 1 : 2 3 is 2); Harrier refuses it.
//   - Printing keeps what is printed readable back: a name after a dot
//     that is not an identifier stays quoted (x.'a b'), a number selected
//     from is parenthesized ((1.5).x) and a negated zero written -0 prints
//     as - 0; libclassad prints x.a b, 1.5.x and -0.
package classad
