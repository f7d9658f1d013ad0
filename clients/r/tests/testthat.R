library(testthat)
library(okboost)

test_check("okboost")
