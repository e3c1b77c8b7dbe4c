from neuron_env.cli import main

main()
