package acl

import "github.com/slotraft/slotraft/resp"

// The errors of the ACL subcommands that the server answers itself, as
// Redis 7.2 words them.
var (
	// ErrNoACLFile is ACL LOAD and ACL SAVE without an aclfile.
	ErrNoACLFile = resp.NewError("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
	// ErrSave is ACL SAVE when writing the file failed.
	ErrSave = resp.NewError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
)

// ErrDryRunNoUser is ACL DRYRUN for a user that does not exist.
func ErrDryRunNoUser(name []byte) *resp.Error {
	return resp.Errorf("ERR User '%s' not found", cstr(string(name)))
}

// ErrDryRunNoCommand is ACL DRYRUN for a command (or container and
// subcommand) that does not exist.
func ErrDryRunNoCommand(name []byte) *resp.Error {
	return resp.Errorf("ERR Command '%s' not found", cstr(string(name)))
}

// HelpLines are ACL HELP's lines after its "ACL <subcommand> ..." header.
var HelpLines = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}
