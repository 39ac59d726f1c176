"""The Solar server: `solar` commands run in a process that has already imported torch, JAX
and transformers (docs/server.md).

Importing torch takes 1.0-2.7 s on a 2-core machine, by the host, more than the rest of a
small program's analysis; a user who analyzes a model again after each edit pays it every
time.
`solar server start` starts a process that imports Solar and the frameworks once and then
waits on a Unix socket. While it runs, each `solar` command that reads a program, of the
same installation and environment, is forwarded to it (client.forward): the server forks,
the child takes over the command's standard streams, working folder, environment and argv,
runs the command as the `solar` process would, and its exit code becomes the command's. A
fork starts from the server's imports, so the child imports only the program itself,
afresh each time.

    place.py    where a server listens: a socket per installation and environment (a key)
    wire.py     the messages between client and server (JSON, with file descriptors)
    client.py   forward(argv): runs a command through the server, if one serves it
    daemon.py   the server: the imports, the socket, a forked child per command
    cli.py      `solar server start|stop|status|run`
"""
