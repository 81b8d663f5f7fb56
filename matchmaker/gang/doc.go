// Package gang is gangmatching, after chapters 3 and 5 of Raman's thesis
// ("Matchmaking Frameworks for Distributed Resource Management", 2001): a
// request that needs several resources at once (a machine and a license
// valid on it, two machines on one subnet) is matched with all of them in
// one operation, or with none.
//
// # Ports, labels and docking
//
// An ad declares what it needs as a list of ports:
//
//	Ports = {
//	  [ Label = Cpu; ImageSize = 13461450; MemoryReqs = 2860414;
//	    Requirements = Cpu.Arch == "INTEL" && Cpu.VirtualMemory > ImageSize ],
//	  [ Label = License; HostId = Cpu.Key;
//	    Requirements = License.App == "sim_app" ] }
//
// Each port is a docking interface with attributes of its own that
// describe the ad to the candidate docked there, a constraint
// (Requirements, or the thesis's Constraint) and an optional Rank. Its
// Label names that candidate: the label evaluates to the candidate's port
// docked at it, and selecting from it (Cpu.Key) looks in that port and
// then in the candidate's ad. A label is in scope from its port to the end
// of the list, so later ports can read earlier partners (HostId above)
// but never the reverse; labels are distinct within an ad, ignoring case.
// A port docks with a port of a candidate when both constraints evaluate
// to exactly true. An ad is satisfied only if all its ports dock (the
// implicit AND), and a gang is a tree rooted at the request: a candidate
// with ports of its own docks at one of them (its parent link, any one)
// and has the others filled in turn.
//
// The evaluation environment is the thesis's Figure 32, built with the
// classad package's Scope and Context: each port of each ad is placed in
// its ad, the ad in a context binding the labels in scope at that port to
// the partners' docked ports. Names are looked up from the port to its ad
// to the labels. An ad's own attribute named like a label hides the
// label.
//
// An ad without Ports has one implicit port labelled other: the ad
// itself, with the ad's Requirements. A request and candidates without
// Ports therefore match as classad.Match matches them: TARGET and other
// mean the partner, a bare name the ad lacks is looked up in the partner,
// and a non-zero number counts as true.
//
// # Preference
//
// Ranks are maximised port by port, left to right, depth first through
// candidates with ports of their own (the order of Gang.Members): each
// port gets the candidate its Rank likes best, ties going to the earlier
// candidate, among those with which the rest of the gang can still be
// completed. Ranks are numbers (booleans count 1 and 0, anything else 0),
// as in classad.Rank.
//
// # Algorithms
//
// A Matcher is built over one cycle's candidates and marshals one gang per
// call; Consume takes a gang's members out of later gangs. The three
// algorithms of chapter 5 are selectable and all form the same gang:
//
//   - Naive fills ports left to right, testing candidates by evaluating
//     both constraints, and backtracks to the port before when a port
//     cannot be filled. A port's history is forgotten when the search
//     backtracks from it, since what docks there depends on the ports
//     before it.
//   - LR does the same, but a port's candidates are those of an index
//     probe specialised against the partial gang: the port's constraint's
//     conjuncts Label.attr op value (or TARGET.attr, or a bare name the
//     port does not define), with the value computed from the port
//     and the partners already docked, window the candidates' attribute
//     values; the port's own values (MemoryReqs, HostId once the Cpu is
//     docked) are tested against the bounds the candidates' constraints
//     put on them (Job.HostID >= 50). The index (index.go) is the
//     thesis's chapter 4 in one dimension per attribute: probes answer a
//     superset of the ports that dock, and evaluation confirms.
//   - DYN first probes every port of an ad before filling it. A port
//     without candidates ends the search at once. A port with fewer
//     candidates than an earlier port it reads through a translation
//     attribute (HostId = Cpu.Key, or Cpu.Key plus a constant) shunts its
//     candidates' bounds (Job.HostID >= 50 && Job.HostID < 100) back
//     through the translation onto that port's probe (Cpu.Key in [50,
//     100)), so that only machines some remaining license is valid on
//     are tried.
//
// Stats counts index probes and constraint evaluations, the thesis's two
// measures; Explain says port by port why a request forms no gang.
//
// # Where Harrier differs from the thesis
//
//   - Harrier's algorithms honour preference (the thesis's chapter 5
//     studies preference-free ones and lets them form different gangs).
//     So DYN does not commit the scarce port's candidate first, which
//     could choose a different gang than LR: it keeps the left-to-right
//     filling and uses the scarce port's candidates as a filter window on
//     the port they depend on, the thesis's own sketch of
//     preference-aware gangmatching (§6.2). It keeps both of DYN's
//     advantages: the early abort and the scarce resource deciding which
//     machines are tried.
//   - The parent-link port of a candidate with several ports is tested
//     when it docks, with the candidate's other ports still empty: a
//     link's constraint that reads the candidate's earlier labels sees
//     them undefined. The thesis marks such a link "tentative yes" and
//     checks it again once they are filled.
//   - Shunting translates through one attribute of the form
//     Label.attr + constant, one hop; the thesis composes inverses over
//     several hops.
//   - Only the top-level conjuncts of a constraint become index windows;
//     a constraint with || at its top is verified by evaluation alone.
//   - TARGET (and a bare name found nowhere) means, in a port, the
//     partner docked at that port; the thesis has labels only.
//   - root and parent at an ad's top level refer to the environment, not
//     to anything in the ads; ads should not rely on them.
//   - The Figure 9 docking vector, root identification and root ordering
//     are the caller's: the negotiator orders requests by priority.
//   - A search gives up after Options.MaxTries docking tests
//     (ErrTooHard): a request with many interchangeable ports can force
//     every algorithm through all their permutations.
package gang
