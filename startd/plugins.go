package startd

import (
	"context"
	"log/slog"

	"harrier.dev/harrier/transferplugin"
)

// queryPlugins asks each of the administrator's transfer plugins what it
// supports, as an unprivileged user (the cron jobs' default) when the
// startd is root, and maps each scheme to its plugin. A plugin that does
// not answer, or answers without multiple-file support, is left out, and
// the log says why: a job needing its scheme then matches elsewhere.
func queryPlugins(paths []string, log *slog.Logger) map[string]string {
	if len(paths) == 0 {
		return nil
	}
	cred, err := cronCredential("", log)
	if err != nil {
		log.Warn("transfer plugins not used: no user to run them as", "err", err)
		return nil
	}
	var plugins []transferplugin.Plugin
	for _, p := range paths {
		pl, err := transferplugin.Query(context.Background(), p, cred)
		switch {
		case err != nil:
			log.Warn("transfer plugin left out", "plugin", p, "err", err)
			continue
		case !pl.MultipleFile:
			log.Warn("transfer plugin left out: it does not support multiple files (MultipleFileSupport)", "plugin", p)
			continue
		}
		log.Info("transfer plugin", "plugin", p, "methods", pl.Methods, "version", pl.Version)
		plugins = append(plugins, pl)
	}
	return transferplugin.Methods(plugins)
}
