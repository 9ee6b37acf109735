module gocycle

go 1.19

require spool v0.0.0

replace spool => ../../go
