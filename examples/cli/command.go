package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cudapool/cudapool/choose"
)

// Main runs an example: run with the program's arguments and standard
// streams, exiting with the status it returns.
func Main(run func(args []string, stdout, stderr io.Writer) int) {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Command is an example program's command line: a flag.FlagSet that prints
// about before its flags and writes to the program's stderr.
type Command struct {
	*flag.FlagSet
	stderr io.Writer
	fake   []func() // Fake's values, set by Run on the fake runtime
}

// New is the command line of the program called name, which does what
// about says.
func New(name, about string, stderr io.Writer) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", about); fs.PrintDefaults() }
	return &Command{FlagSet: fs, stderr: stderr}
}

// ParseArgs parses args. exit says the program is to stop with code: 0
// after -h, which printed the usage, and 2 after a bad flag, which printed
// what was wrong.
func (c *Command) ParseArgs(args []string) (code int, exit bool) {
	switch err := c.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		return 2, true
	}
	return 0, false
}

// runtimeUsage is the -runtime flag's help.
const runtimeUsage = "CUDA runtime to use: " + choose.Modes

// Runtime defines the -runtime flag every example takes, the argument of
// choose.Open.
func (c *Command) Runtime() *string { return c.String("runtime", "", runtimeUsage) }

// RuntimeVar is Runtime into p.
func (c *Command) RuntimeVar(p *string) { c.StringVar(p, "runtime", "", runtimeUsage) }

// Given says whether the command line set the flag called name: the
// examples run smaller on the fake runtime than on CUDA unless told.
func (c *Command) Given(name string) bool {
	given := false
	c.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// Fail prints the program's name, a colon and a, spaced as fmt.Println
// spaces them, to stderr and returns code, the program's exit status.
func (c *Command) Fail(code int, a ...any) int {
	fmt.Fprint(c.stderr, c.Name()+": ")
	fmt.Fprintln(c.stderr, a...)
	return code
}

// Fake makes v the value of the flag called name, which sets *p, on the
// fake runtime unless the command line gives it: how an example runs
// smaller there than on CUDA. Run sets it, once the runtime is open.
func Fake[T any](c *Command, name string, p *T, v T) {
	c.fake = append(c.fake, func() {
		if !c.Given(name) {
			*p = v
		}
	})
}

// Run runs work, the program's work on rt once the command line is parsed
// and checked: on the fake runtime it first sets the flags given to Fake,
// then it prints "runtime: " and rt's description to stdout. It returns
// the program's exit status: 0, or 1 after printing work's error.
func (c *Command) Run(rt *choose.Runtime, stdout io.Writer, work func() error) int {
	if !rt.CUDA {
		for _, set := range c.fake {
			set()
		}
	}
	fmt.Fprintf(stdout, "runtime: %s\n", rt.Description)
	if err := work(); err != nil {
		return c.Fail(1, err)
	}
	return 0
}
