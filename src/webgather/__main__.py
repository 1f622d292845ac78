from webgather._entry import run

run()
