from cetql.surfaces.cli.launch import command

command()
