package main

import (
	"flag"
	"fmt"
	"strings"
)

// Every `slotraft server` flag can also come from the environment, as
// containers are usually configured: --data-dir is SLOTRAFT_DATA_DIR,
// --cluster-secret-file SLOTRAFT_CLUSTER_SECRET_FILE. Precedence, highest
// first: the command line, the environment, the config file (--config,
// itself a flag and so SLOTRAFT_CONFIG too), the defaults.

// envPrefix starts the name of every flag's environment variable.
const envPrefix = "SLOTRAFT_"

// envName is the environment variable of flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets, from the environment (lookup, os.LookupEnv in
// production), every flag of fs the command line did not set. A flag set
// this way counts as given: the config file does not override it.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	fs.VisitAll(func(fl *flag.Flag) {
		if err != nil || given[fl.Name] {
			return
		}
		v, ok := lookup(envName(fl.Name))
		if !ok {
			return
		}
		if e := fs.Set(fl.Name, v); e != nil {
			err = fmt.Errorf("environment %s=%q: %w", envName(fl.Name), v, e)
		}
	})
	return err
}
