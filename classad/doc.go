// Package classad implements the ClassAd language of the Condor family:
// parsing (new syntax, old syntax and JSON), printing, evaluation with
// three-valued logic, and symmetric matchmaking.
//
// A ClassAd is a set of named expressions. Parsing yields expressions;
// evaluating them yields values. Matching two ads evaluates each ad's
// Requirements with the other ad as TARGET; Rank orders the matches.
//
// # Where Harrier follows HTCondor over the 2001 thesis
//
// The thesis (Raman, "Matchmaking Frameworks for Distributed Resource
// Management") is the model; where today's HTCondor libclassad behaves
// differently, this package does what HTCondor does:
//
//   - && and || short-circuit: false && error is false, true || error is true.
//   - Numbers stand for booleans in &&, ||, ! and ?: (non-zero is true), so
//     1 && true is true. A string or list there is error.
//   - Booleans are promoted to integers in arithmetic and comparison:
//     true + 1 is 2 and true == 1 is true.
//   - == and the other comparisons compare strings ignoring case;
//     =?= and =!= (and their spellings is and isnt) compare case-sensitively,
//     never yield undefined, and distinguish 1 from 1.0.
//   - Integers are 64-bit; overflow wraps. Division and modulo truncate toward
//     zero; division or modulo by zero (integer or real) is error.
//   - Shift counts are taken modulo 64; >> is arithmetic, >>> logical.
//   - A list subscript out of range is error, not undefined.
//   - A circular reference ([a = b; b = a]) evaluates to error, not undefined.
//   - Bare names not found in the ad or its enclosing ads are looked up in
//     the TARGET ad, as libclassad's alternate scope does during matching.
//     MY and self denote the innermost ad, TARGET and other the match partner.
//   - Single quotes delimit attribute names ('odd name'); absolute and
//     relative times are written absTime("...") and relTime("...").
//   - Numbers may carry a B, K, M, G or T factor (2K is 2048.0), as in both.
//   - Rank values that are booleans count as 1 and 0.
//
// Evaluation is bounded: nesting deeper than MaxNesting is refused by the
// parser, and evaluation gives up with error after a fixed number of
// attribute evaluations or references in progress.
package classad
