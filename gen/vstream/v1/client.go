package vstreamv1

// ClientHeader is the request metadata key a client names its program with, as
// "program" or "program/instance" (the Go client's Options.Identity; vstream-sink sends
// "vstream-sink/<its name>"). The server shows it on its status page; it is a label for
// people, never a credential.
const ClientHeader = "x-vstream-client"
