module spool

go 1.19
