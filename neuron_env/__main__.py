from neuron_env.entry import main

main()
