package classad

func registerConversions(map[string]builtin) {}
func registerStrings(map[string]builtin)     {}
func registerLists(map[string]builtin)       {}
func registerMath(map[string]builtin)        {}
func registerTime(map[string]builtin)        {}
func registerMisc(map[string]builtin)        {}
