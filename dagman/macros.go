package dagman

import (
	"strconv"
	"strings"
)

// SubmitMacros are what a node's submit file is read with: defines,
// NAME=VALUE macros set before the file (its VARS), and appends, submit
// commands read just before its queue statement (its APPEND VARS and
// +Attr or My.Attr VARS, its log, DAGNodeName, DAGManJobId when dagJob,
// the DAG's own job's cluster, is not 0, and its priority).
func (j Job) SubmitMacros(dagJob int) (defines, appends []string) {
	for _, v := range j.Vars {
		if v.Append || strings.HasPrefix(v.Name, "+") || strings.HasPrefix(strings.ToLower(v.Name), "my.") {
			appends = append(appends, v.Name+" = "+v.Value)
		} else {
			defines = append(defines, v.Name+"="+v.Value)
		}
	}
	appends = append(appends, "log = "+j.Log, "+DAGNodeName = "+strconv.Quote(j.Node))
	if dagJob != 0 {
		appends = append(appends, "+DAGManJobId = "+strconv.Itoa(dagJob))
	}
	if j.Priority != 0 {
		appends = append(appends, "priority = "+strconv.Itoa(j.Priority))
	}
	return defines, appends
}
